"""entrograd.Client: a training worker's connection to the aggregator shards.

Wraps entrograd::Client (client_lib/include/entrograd/client.h). The client
is created with the job's identity and connected by the DistributedOptimizer
it is given to, since the Join carries the model's layer table and the hash
of its initial parameters. One optimizer per client.

Errors: the constructor raises TypeError for arguments of the wrong type
and InvalidArgumentError for a TLS file that cannot be read; the values
themselves (rank < world_size, the job id's characters, ...) are checked by
the C++ client when the optimizer connects it (InvalidArgumentError naming
the field). Connecting raises UnavailableError when a shard cannot be
reached within `join_timeout`.

Thread safety: a Client is used by one Python thread at a time (it holds the
GIL); the C++ client underneath serves the optimizer's autograd hooks.
"""

import dataclasses
import time

from . import _C
from .errors import InvalidArgumentError


@dataclasses.dataclass(frozen=True)
class TLS:
    """TLS to the shards: PEM files. `ca_file` (the CA that signed the
    shards' certificates) turns TLS on; `cert_file` and `key_file` (both or
    neither) add a client certificate for mTLS."""

    ca_file: str
    cert_file: str = None
    key_file: str = None


def _read_pem(field, path):
    if path is None:
        return ""
    try:
        with open(path, "rb") as file:
            text = file.read().decode("ascii")
    except (OSError, UnicodeDecodeError) as error:
        raise InvalidArgumentError(
            "INVALID_ARGUMENT", f"tls.{field}={path}: cannot be read ({error})"
        ) from None
    if not text:
        # An empty CA would silently turn TLS off.
        raise InvalidArgumentError("INVALID_ARGUMENT", f"tls.{field}={path} is empty")
    return text


def _check_type(name, value, types, expected):
    # bool is an int to Python; a rank of True is a mistake.
    if isinstance(value, bool) and bool not in types or not isinstance(value, types):
        raise TypeError(f"{name} must be {expected}, not {type(value).__name__}")


class Client:
    """The connection of rank `rank` of job `job_id` to the shards.

    shards: aggregator addresses "host:port", the same list in the same
      order on every rank.
    job_id: [A-Za-z0-9._-]{1,128}, shared by the ranks.
    rank, world_size: 0 <= rank < world_size.
    token: bearer token (str) or None.
    tls: a TLS(...) or None for plaintext.
    value_type: "f32" (exact), "f16", "bf16" or "e5m2" (one byte) for uplink
      values; with a lossy type the optimizer keeps each sent value's
      rounding error in its residual.
    gap_range_indices: let indices travel range coded (the "gap_range"
      encoding) where that is smallest, both ways; False: only the older
      encodings (for a shard that predates it). The values are the same.
    merge_timeout: seconds one merged layer is waited for before
      DeadlineExceededError.
    reconnect_give_up_after: seconds a broken shard is retried before
      UnavailableError fails the job.
    join_timeout: seconds connecting waits for every shard's JoinAck.
    incarnation: bumped on every process start; default: now in
      microseconds, as entrograd-worker does.
    partition_bytes: layers larger than this travel as parts (0: never).
    metrics_listen: "host:port" of a Prometheus /metrics endpoint for this
      rank (port 0 picks a free one, see .metrics_port), as entrograd-worker's
      --metrics_listen: compress time, wire and dense-equivalent bytes,
      reconnects (entrograd_client_*, labelled job and rank). None: no
      endpoint. Both DistributedOptimizer and comm_hook report into it.
    per_layer_metrics: also each layer's entropy and keep ratio.
    """

    def __init__(self, shards, job_id, rank, world_size, token=None, tls=None, *,
                 value_type="f32", merge_timeout=120.0,
                 reconnect_give_up_after=120.0, join_timeout=60.0,
                 incarnation=None, partition_bytes=None, metrics_listen=None,
                 per_layer_metrics=False, gap_range_indices=True):
        if isinstance(shards, (str, bytes)) or not isinstance(shards, (list, tuple)):
            raise TypeError("shards must be a list of 'host:port' strings, "
                            f"not {type(shards).__name__}")
        for shard in shards:
            _check_type("each shard", shard, (str,), "a 'host:port' string")
        _check_type("job_id", job_id, (str,), "a str")
        _check_type("rank", rank, (int,), "an int")
        _check_type("world_size", world_size, (int,), "an int")
        if rank < 0 or world_size < 0:
            raise TypeError("rank and world_size must be non-negative ints")
        if token is not None:
            _check_type("token", token, (str,), "a str or None")
        if tls is not None and not isinstance(tls, TLS):
            raise TypeError(f"tls must be entrograd.TLS or None, not {type(tls).__name__}")
        _check_type("join_timeout", join_timeout, (int, float), "seconds (a number)")
        if metrics_listen is not None:
            _check_type("metrics_listen", metrics_listen, (str,), "a 'host:port' str or None")
        _check_type("per_layer_metrics", per_layer_metrics, (bool,), "a bool")
        _check_type("gap_range_indices", gap_range_indices, (bool,), "a bool")

        options = _C.ClientOptions()
        options.shards = list(shards)
        options.job_id = job_id
        options.rank = rank
        options.world_size = world_size
        options.token = token or ""
        if tls is not None:
            options.tls_root_certs = _read_pem("ca_file", tls.ca_file)
            options.tls_client_cert = _read_pem("cert_file", tls.cert_file)
            options.tls_client_key = _read_pem("key_file", tls.key_file)
        options.value_type = value_type
        options.gap_range_indices = gap_range_indices
        options.merge_timeout = merge_timeout
        options.reconnect_give_up_after = reconnect_give_up_after
        options.incarnation = (incarnation if incarnation is not None
                               else time.time_ns() // 1000)
        if partition_bytes is not None:
            options.partition_bytes = partition_bytes
        self._join_timeout = float(join_timeout)
        self._impl = _C.Client(options, metrics_listen=metrics_listen or "",
                               per_layer_metrics=per_layer_metrics)

    @property
    def rank(self):
        return self._impl.options.rank

    @property
    def world_size(self):
        return self._impl.options.world_size

    @property
    def connected(self):
        return self._impl.connected

    @property
    def metrics_port(self):
        """The port of the /metrics endpoint; None without one."""
        return self._impl.metrics_port or None

    def traffic(self):
        """Byte counters: uplink/downlink wire and dense-equivalent bytes,
        reconnects, saturated f16/bf16/e5m2 values (zeros before connecting)."""
        return self._impl.traffic()

    def close(self):
        """Closes every stream; pending waits fail with CANCELLED. Idempotent."""
        self._impl.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        self.close()

    def _connect(self, named_parameters, applied_step):
        """Joins with the layer table of `named_parameters`; blocks up to
        join_timeout with the GIL released."""
        self._impl.connect(named_parameters, applied_step, self._join_timeout)

