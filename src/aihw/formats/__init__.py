"""Number formats: the one registry of formats and their names (:mod:`~aihw.formats.precision`), and every
value at the bit level (:mod:`~aihw.formats.numerics`: encode, decode, rounding, block-scaled formats).

Every module that names a precision resolves it with :func:`get_format` (or, for a config's precision setting,
:func:`resolve_precision`) and asks it for its bytes.
"""

from aihw.formats.precision import (
    FORMATS,
    TRAINING_PRECISIONS,
    WEIGHT_PRECISIONS,
    NumberFormat,
    Precision,
    activation_bytes_per_value,
    bytes_per_element,
    format_table,
    get_format,
    resolve_precision,
)

__all__ = ["FORMATS", "NumberFormat", "Precision", "TRAINING_PRECISIONS", "WEIGHT_PRECISIONS",
           "activation_bytes_per_value", "bytes_per_element", "format_table", "get_format", "resolve_precision"]
