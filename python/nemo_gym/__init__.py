"""NeMo Gym's Python entry points for RL trainers, running gym-cpp underneath.

Trainers import the names NeMo Gym gives them and call them unchanged:

    from nemo_gym.cli import GlobalConfigDictParserConfig, RunHelper
    from nemo_gym.rollout_collection import RolloutCollectionHelper
    from nemo_gym.server_utils import HEAD_SERVER_KEY_NAME, BaseServerConfig, ServerClient

The servers are gym-cpp's `gym` binary (found through GYM_BINARY, inside this package when it
was built with `make wheel`, or on PATH). See docs/guides/training.md in gym-cpp.
"""

__version__ = "0.7.0+gymcpp.0.1.0"
