"""Number formats: the one registry of formats and their names (:mod:`~aihw.formats.precision`), and every
value at the bit level (:mod:`~aihw.formats.numerics`: encode, decode, rounding, block-scaled formats).

Every module that names a precision resolves it with :func:`get_format` and asks it for its bytes.
"""

from aihw.formats.precision import FORMATS, NumberFormat, bytes_per_element, format_table, get_format

__all__ = ["FORMATS", "NumberFormat", "bytes_per_element", "format_table", "get_format"]
