"""The state digest through the wire: hex in every State and in step_batch's arrays, equal for
equal histories however the steps are split, different for different ones."""


def test_digest_partition_and_hex(client):
    a = client.create_world("finger", seed=4)
    b = client.create_world("finger", seed=4)
    c = client.create_world("finger", seed=5)
    try:
        sa = client.step(a, steps=10, commands={"finger": [1.0]})
        client.step(b, steps=1, commands={"finger": [1.0]})
        for _ in range(9):
            sb = client.step(b, steps=1)
        sc = client.step(c, steps=10, commands={"finger": [1.0]})
        assert len(sa["digest"]) == 64 and int(sa["digest"], 16) >= 0
        assert sa["digest"] == sb["digest"] == client.get_state(a)["digest"]
        assert sc["digest"] != sa["digest"]
    finally:
        for w in (a, b, c):
            client.destroy_world(w)


def test_digest_in_batches(client):
    """StepBatch's both forms carry the digest; stepping alike by batch or alone agrees."""
    import numpy as np
    ws = [client.create_world("finger", seed=2) for _ in range(3)]
    try:
        arr = client.step_arrays(ws[:2], commands=np.array([[0.7], [0.7]]), steps=5)
        items = client.step_batch([{"world_id": ws[2], "commands": {"finger": [0.7]},
                                    "steps": 5}])
        assert arr["digest"][0] == arr["digest"][1] == items[0]["digest"]
        assert arr["digest"][0] == client.get_state(ws[0])["digest"]
        assert len(arr["digest"][0]) == 64
    finally:
        for w in ws:
            client.destroy_world(w)
