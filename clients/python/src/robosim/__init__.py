"""robosim: the Python client of the robosim simulation server.

    robosim.Client            one method per protocol operation (client.py)
    robosim.RobosimError      the server's error code and message; robosim.TimeoutError
    gymnasium.make("robosim/FingerPush-v0")   Gymnasium environments for the server's tasks
    gymnasium.make("robosim/SerialArmReachGoal-v1")   goal-conditioned variants (robosim.goal)
    robosim.vector.make(id, num_envs=N)      a VectorEnv stepped by one batched request
    robosim.Observer(endpoint, world_id)     the live stream of one world
    robosim.LocalServer()     a robosim-server child process on a free loopback port
    robosim.example_spec(name)               the path of an example motion specification
"""
from .client import Client
from .errors import ProtocolError, RobosimError, TimeoutError
from .envs import TASKS, RobosimEnv, register_envs
from .envs import register_task_document as register_task
from .observer import Observer
from .server import LocalServer, find_server_binary
from .specs import example_spec, example_spec_names
from .goal import GOAL_TASKS, register_goal_envs
from . import baselines, goal, specs, vector  # noqa: F401

from ._util import package_version

__version__: str = package_version()

register_envs()
register_goal_envs()

__all__ = ["Client", "RobosimError", "TimeoutError", "ProtocolError", "RobosimEnv", "TASKS",
           "Observer", "LocalServer", "find_server_binary", "vector", "baselines", "register_envs", "register_task",
           "goal", "GOAL_TASKS", "register_goal_envs",
           "example_spec", "example_spec_names", "specs"]
