"""evalkit's errors and warnings: one small hierarchy, so users can catch or filter them by kind.

Errors
------
``EvalkitError``
    Base of every error evalkit raises on purpose.
``EvalkitInputError`` (also a ``ValueError``)
    An argument that evalkit cannot use. It names the argument (``.argument``), says what was wrong
    and what is allowed. Every public function validates its inputs at the door and raises this.

Warnings
--------
``EvalkitWarning`` (a ``UserWarning``)
    Base of every statistical caveat evalkit wants the reader to see.
``DegenerateDataWarning``
    The data leave an estimate poorly defined: one cluster, every outcome equal, two identical models.
``RangeWarning``
    A result outside its natural range (an accuracy above 1, a reversed or zero-width interval).
``ConvergenceWarning``
    An iterative fit stopped before its convergence rule was met, or met separation.
``OverlapWarning``
    Fitted propensities near 0 or 1: weights are extreme and weighted estimates are fragile.
``SmallClustersWarning``
    Too few effective clusters for a cluster-robust interval to be trusted at face value.

Filter one kind with, for example,
``warnings.simplefilter("ignore", evalkit.errors.ConvergenceWarning)``.
"""

from __future__ import annotations

__all__ = [
    "ConvergenceWarning",
    "DegenerateDataWarning",
    "EvalkitError",
    "EvalkitInputError",
    "EvalkitInputNotFoundError",
    "EvalkitInputTypeError",
    "EvalkitWarning",
    "OverlapWarning",
    "RangeWarning",
    "SmallClustersWarning",
]


class EvalkitError(Exception):
    """Base of every error evalkit raises on purpose."""


class EvalkitInputError(EvalkitError, ValueError):
    """An argument evalkit cannot use; ``argument`` names it.

    Parameters
    ----------
    argument : str
        The name of the offending argument, as the caller wrote it.
    message : str
        What was wrong and what is allowed. Prefixed with the argument's name unless it already
        starts with it.
    """

    def __init__(self, argument: str, message: str) -> None:
        self.argument = argument
        text = message if message.startswith(argument) else f"{argument}: {message}"
        super().__init__(text)


class EvalkitWarning(UserWarning):
    """A statistical caveat evalkit wants the reader to see (degenerate cluster, capped weight...)."""


class DegenerateDataWarning(EvalkitWarning):
    """The data leave the estimate poorly defined (one cluster, all outcomes equal, identical models)."""


class RangeWarning(EvalkitWarning):
    """A result lies outside its natural range, or an interval has zero width or is reversed."""


class ConvergenceWarning(EvalkitWarning):
    """An iterative fit stopped before meeting its convergence rule, or met separation."""


class OverlapWarning(EvalkitWarning):
    """Fitted propensities near 0 or 1: inverse weights are extreme and weighted estimates fragile."""


class SmallClustersWarning(EvalkitWarning):
    """Too few effective clusters for a cluster-robust interval to be taken at face value."""


class EvalkitInputTypeError(EvalkitInputError, TypeError):
    """An argument of the wrong type (also a ``TypeError``, so ``except TypeError`` still catches it)."""


class EvalkitInputNotFoundError(EvalkitInputError, FileNotFoundError):
    """A path argument that names no file or folder (also a ``FileNotFoundError``)."""
