"""The one type for values that really can be any JSON: at the edges (files, wire), never inside.

Inside the package records have fields (dataclasses, TypedDicts); this is only for what a JSON
document may hold before it is parsed into one, or after it was turned back into one.
"""

from __future__ import annotations

from typing import TypeAlias

JSONScalar: TypeAlias = str | int | float | bool | None
JSONValue: TypeAlias = JSONScalar | list["JSONValue"] | dict[str, "JSONValue"]
JSONObject: TypeAlias = dict[str, JSONValue]
