"""Exceptions raised by entrograd.

Every failure of the C++ library reaches Python as an `Error`: `.code` is the
gRPC status code name ("UNAVAILABLE", "INVALID_ARGUMENT", ...) and
`.message` the library's message. Codes that have a natural Python
counterpart raise a subclass that is also that built-in exception, so both
`except entrograd.Error` and, e.g., `except ValueError` catch a bad
argument:

  INVALID_ARGUMENT     InvalidArgumentError(Error, ValueError)
  OUT_OF_RANGE         OutOfRangeError(Error, ValueError)
  UNAVAILABLE          UnavailableError(Error, ConnectionError)
  DEADLINE_EXCEEDED    DeadlineExceededError(Error, TimeoutError)
  FAILED_PRECONDITION  FailedPreconditionError(Error, RuntimeError)
  ABORTED              AbortedError(Error, RuntimeError)
  other codes          Error

Wrong Python types (a str where a list is expected, a negative rank) raise
TypeError before anything reaches the C++ library.
"""


class Error(Exception):
    """An entrograd call failed; `.code` names the gRPC status code."""

    def __init__(self, code, message):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class InvalidArgumentError(Error, ValueError):
    """INVALID_ARGUMENT: an option, tensor or state the call cannot take."""


class OutOfRangeError(Error, ValueError):
    """OUT_OF_RANGE."""


class UnavailableError(Error, ConnectionError):
    """UNAVAILABLE: an aggregator shard cannot be reached."""


class DeadlineExceededError(Error, TimeoutError):
    """DEADLINE_EXCEEDED: a wait ran past its timeout."""


class FailedPreconditionError(Error, RuntimeError):
    """FAILED_PRECONDITION: the call does not fit the current state."""


class AbortedError(Error, RuntimeError):
    """ABORTED: the round was given up (e.g. a rank died)."""


_CLASSES = {
    "INVALID_ARGUMENT": InvalidArgumentError,
    "OUT_OF_RANGE": OutOfRangeError,
    "UNAVAILABLE": UnavailableError,
    "DEADLINE_EXCEEDED": DeadlineExceededError,
    "FAILED_PRECONDITION": FailedPreconditionError,
    "ABORTED": AbortedError,
}


def _from_status(code, message):
    """The exception for a C++ absl::Status (called by entrograd._C)."""
    return _CLASSES.get(code, Error)(code, message)
