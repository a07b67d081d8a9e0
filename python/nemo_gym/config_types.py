"""Config value types callers construct themselves."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


class BaseServerConfig:
    """Where a server listens: `BaseServerConfig(host="127.0.0.1", port=11000)`."""

    __slots__ = ("host", "port")

    def __init__(self, *, host: str, port: int):
        if not isinstance(host, str) or not host:
            raise ValueError(f"host must be a non-empty string, got {host!r}")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise ValueError(f"port must be an integer in 1..65535, got {port!r}")
        self.host = host
        self.port = port

    @classmethod
    def model_validate(cls, value: Any) -> "BaseServerConfig":
        if isinstance(value, cls):
            return value
        if not isinstance(value, Mapping) or "host" not in value or "port" not in value:
            raise ValueError(f"a server config needs `host` and `port`, got {value!r}")
        return cls(host=str(value["host"]), port=int(value["port"]))

    def model_dump(self, **_: Any) -> dict:
        return {"host": self.host, "port": self.port}

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, BaseServerConfig) and (self.host, self.port) == (other.host, other.port)

    def __hash__(self) -> int:
        return hash((self.host, self.port))

    def __repr__(self) -> str:
        return f"BaseServerConfig(host={self.host!r}, port={self.port})"
