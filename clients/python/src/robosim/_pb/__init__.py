"""Generated protocol code: robosim_pb2.py is written here at build time (setup.py) or at import
time when the proto changed (robosim/_proto.py). It is never committed."""
