"""An example policy module for the eval image: mount this folder at /policies and pass
`--policy example_policy:act`. A policy maps an observation to an action; this one is the
scripted FingerPush baseline that ships with the client (robosim.baselines.finger_push)."""
from robosim.baselines import finger_push


def act(obs):
    return finger_push(obs)
