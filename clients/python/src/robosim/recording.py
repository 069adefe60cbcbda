"""Reading the MCAP recordings robosim record writes (robosim.record): their frames and their
world descriptions. Its own module so that the viewer (robosim.view.server) reads recordings
without importing the recorder, which starts the viewer for replay --view."""
import json

from ._proto import pb

TOPIC = "/world/%d"


def read_worlds(path):
    """The world descriptions a recording holds (the viewer's "world" messages)."""
    from mcap.reader import make_reader
    with open(path, "rb") as f:
        return [json.loads(m.metadata["json"]) for m in make_reader(f).iter_metadata()
                if m.name == "robosim.world"]


def read(path, world_id=None):
    """The frames of a recording, in file order: a list of (world_id, seq, StreamFrame message,
    raw bytes)."""
    from mcap.reader import make_reader
    from mcap_protobuf.decoder import DecoderFactory
    out = []
    with open(path, "rb") as f:
        reader = make_reader(f, decoder_factories=[DecoderFactory()])
        topics = None if world_id is None else [TOPIC % world_id]
        for schema, channel, message, decoded in reader.iter_decoded_messages(topics=topics):
            frame = pb.StreamFrame.FromString(message.data)
            out.append((frame.world_id, frame.seq, frame, message.data))
    return out
