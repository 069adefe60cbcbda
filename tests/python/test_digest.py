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
