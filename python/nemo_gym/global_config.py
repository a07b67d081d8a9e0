"""The global config dict: one merged configuration for every server of a deployment.

As in NeMo Gym, `get_global_config_dict()` returns the config this process works from, computed
once and cached. gym-cpp computes it (the `gym` binary merges config files, env.yaml, the
caller's initial dict and command-line overrides exactly as `gym env start` does); this module
only passes the caller's inputs to it and reads the result back. Secrets in the result are
masked as `****`: the servers that need a key read it from their own environment, never from
here.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

import yaml

from nemo_gym._gym_binary import find_gym_binary

NEMO_GYM_CONFIG_DICT_ENV_VAR_NAME = "NEMO_GYM_CONFIG_DICT"
NEMO_GYM_CONFIG_PATH_ENV_VAR_NAME = "NEMO_GYM_CONFIG_PATH"
CONFIG_PATHS_KEY_NAME = "config_paths"
ENTRYPOINT_KEY_NAME = "entrypoint"
DEFAULT_HOST_KEY_NAME = "default_host"
HEAD_SERVER_KEY_NAME = "head_server"
DISALLOWED_PORTS_KEY_NAME = "disallowed_ports"
HF_TOKEN_KEY_NAME = "hf_token"
RAY_HEAD_NODE_ADDRESS_KEY_NAME = "ray_head_node_address"
PORT_RANGE_LOW_KEY_NAME = "port_range_low"
PORT_RANGE_HIGH_KEY_NAME = "port_range_high"
DRY_RUN_KEY_NAME = "dry_run"
MODEL_ENDPOINT_READINESS_TIMEOUT_KEY_NAME = "model_endpoint_readiness_timeout_seconds"
NEMO_GYM_LOG_DIR_KEY_NAME = "nemo_gym_log_dir"
VERBOSE_KEY_NAME = "verbose"
TOKEN_ID_CAPTURE_BLOCK = "token_id_capture"
RESPONSES_CREATE_PARAMS_KEY_NAME = "responses_create_params"
RESPONSE_KEY_NAME = "response"
AGENT_REF_KEY_NAME = "agent_ref"
POLICY_BASE_URL_KEY_NAME = "policy_base_url"
POLICY_API_KEY_KEY_NAME = "policy_api_key"  # pragma: allowlist secret
POLICY_MODEL_NAME_KEY_NAME = "policy_model_name"
POLICY_MODEL_KEY_NAME = "policy_model"
DEFAULT_HEAD_SERVER_PORT = 11000

_GLOBAL_CONFIG_DICT = None  # what get_global_config_dict returns once computed


class GlobalConfigDictParserConfig:
    """How the global config is assembled; NeMo Gym's fields and meaning.

    initial_global_config_dict: a dict or an omegaconf DictConfig. It sits above env.yaml and
        below command-line overrides, and its `config_paths` list names the config files.
    dotenv_path: the env.yaml to read instead of searching for one. A path that does not exist
        means no env.yaml at all, as in NeMo Gym.
    skip_load_from_cli: ignore this process's command line (trainers set it; otherwise every
        argument of `sys.argv[1:]` is a config override, as NeMo Gym's Hydra parser reads them).
    skip_load_from_dotenv: read no env.yaml.
    hide_secrets, offline: accepted for compatibility; gym-cpp always masks what it shows, and
        computing a config never starts anything.
    """

    def __init__(
        self,
        *,
        dotenv_path: Optional[os.PathLike | str] = None,
        initial_global_config_dict: Optional[Mapping] = None,
        skip_load_from_cli: bool = False,
        skip_load_from_dotenv: bool = False,
        hide_secrets: bool = False,
        offline: bool = False,
    ):
        if initial_global_config_dict is not None and not isinstance(initial_global_config_dict, Mapping):
            # DictConfig is a MutableMapping too.
            raise TypeError(
                "initial_global_config_dict must be a dict or an omegaconf DictConfig, got "
                f"{type(initial_global_config_dict).__name__}"
            )
        self.dotenv_path = Path(dotenv_path) if dotenv_path is not None else None
        self.initial_global_config_dict = initial_global_config_dict
        self.skip_load_from_cli = bool(skip_load_from_cli)
        self.skip_load_from_dotenv = bool(skip_load_from_dotenv)
        self.hide_secrets = bool(hide_secrets)
        self.offline = bool(offline)

    def __repr__(self) -> str:
        keys = sorted(to_plain(self.initial_global_config_dict or {}))
        return (
            f"GlobalConfigDictParserConfig(dotenv_path={self.dotenv_path!r}, initial keys={keys}, "
            f"skip_load_from_cli={self.skip_load_from_cli}, "
            f"skip_load_from_dotenv={self.skip_load_from_dotenv})"
        )

    def gym_arguments(self, private_dir: Path) -> list[str]:
        """The `gym` config arguments for these inputs. The initial dict may hold secrets (API
        keys, tokens): it goes into a file only this user can read, inside `private_dir`, never
        onto a command line that `ps` shows."""
        args: list[str] = []
        initial = to_plain(self.initial_global_config_dict or {})
        if initial:
            path = Path(private_dir) / "initial_global_config.yaml"
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w") as f:
                yaml.safe_dump(initial, f, sort_keys=False, allow_unicode=True)
            args += ["--initial-config", str(path)]
        if self.skip_load_from_dotenv:
            args.append("--no-env-file")
        elif self.dotenv_path is not None:
            # NeMo Gym reads the file when it exists and otherwise no env.yaml at all.
            args += ["--env-file", str(self.dotenv_path)] if self.dotenv_path.exists() else ["--no-env-file"]
        if not self.skip_load_from_cli:
            args += sys.argv[1:]
        return args


def to_plain(value: Any) -> Any:
    """A DictConfig/ListConfig/Mapping/sequence as plain dicts, lists and scalars. Interpolations
    (`${policy_base_url}`) stay as text: gym resolves them after merging, as NeMo Gym does."""
    try:
        from omegaconf import DictConfig, ListConfig, OmegaConf

        if isinstance(value, (DictConfig, ListConfig)):
            value = OmegaConf.to_container(value, resolve=False)  # may still hold Paths
    except ImportError:
        pass
    if isinstance(value, Mapping):
        return {str(k): to_plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_plain(v) for v in value]
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    return value


def as_config(plain: dict) -> Any:
    """A DictConfig when omegaconf is installed (what NeMo Gym returns), else the plain dict."""
    try:
        from omegaconf import OmegaConf
    except ImportError:
        return plain
    return OmegaConf.create(plain)


def set_global_config_dict(plain: dict) -> Any:
    """Caches the config this process works from (RunHelper.start does, once gym is up)."""
    global _GLOBAL_CONFIG_DICT
    _GLOBAL_CONFIG_DICT = as_config(plain)
    return _GLOBAL_CONFIG_DICT


def maybe_get_global_config_dict() -> Any:
    """The cached config, or the one a parent process passed in NEMO_GYM_CONFIG_DICT, or None."""
    if _GLOBAL_CONFIG_DICT is not None:
        return _GLOBAL_CONFIG_DICT
    text = os.environ.get(NEMO_GYM_CONFIG_DICT_ENV_VAR_NAME)
    if text:
        return set_global_config_dict(yaml.safe_load(text) or {})
    return None


def compute_global_config_dict(parser_config: Optional[GlobalConfigDictParserConfig] = None) -> dict:
    """The merged, validated config for `parser_config`, as `gym config show` prints it (secrets
    masked). Starts nothing. Raises RuntimeError with gym's message when the config is wrong."""
    import tempfile

    parser_config = parser_config or GlobalConfigDictParserConfig()
    with tempfile.TemporaryDirectory(prefix="gym-config-") as private_dir:
        command = [find_gym_binary(), "config", "show", *parser_config.gym_arguments(Path(private_dir))]
        done = subprocess.run(command, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RuntimeError(
            f"gym config show exited with code {done.returncode}:\n{(done.stderr or done.stdout).strip()}"
        )
    return yaml.safe_load(done.stdout) or {}


def get_global_config_dict(
    global_config_dict_parser_config: Optional[GlobalConfigDictParserConfig] = None,
    global_config_dict_parser_cls: Any = None,
) -> Any:
    """The global config dict of this process, computed on first use and cached (a DictConfig
    when omegaconf is installed). After RunHelper.start it is the running deployment's config,
    with the ports the servers actually got."""
    if global_config_dict_parser_cls is not None:
        raise NotImplementedError(
            "gym-cpp merges configs in its `gym` binary; a custom GlobalConfigDictParser class "
            "cannot take part in that"
        )
    existing = maybe_get_global_config_dict()
    if existing is not None:
        return existing
    return set_global_config_dict(compute_global_config_dict(global_config_dict_parser_config))


def get_first_server_config_dict(global_config_dict: Any, top_level_path: str) -> Any:
    """The block of instance `top_level_path` (three levels down: instance, server type,
    implementation), where its host and port are."""
    config = global_config_dict
    for level, key in enumerate((top_level_path, None, None)):
        if not isinstance(config, Mapping):
            raise ValueError(f"`{top_level_path}` is not a server instance of this config")
        if key is None:
            keys = list(config.keys())
            if not keys:
                raise ValueError(f"`{top_level_path}` is not a server instance of this config")
            key = keys[0]
        elif key not in config:
            names = sorted(k for k, v in to_plain(global_config_dict).items() if _is_instance(v))
            raise ValueError(f"no server instance named `{top_level_path}` in this config; instances: {names}")
        config = config[key]
    return config


def _is_instance(block: Any) -> bool:
    return (
        isinstance(block, Mapping)
        and len(block) == 1
        and next(iter(block)) in ("responses_api_models", "resources_servers", "responses_api_agents")
    )
