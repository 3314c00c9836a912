"""What every reader of another companion's file does alike: decode its bytes, parse its JSON,
and check its fields, gathering every problem (each naming its line or field) before refusing.

A field path is written as the file nests it: ``entries.3.content`` for a key of an object,
``data.character_book.entries[3]`` for an item of a list.
"""

import json

from transfer.bundle import BridgeError
from transfer.limits import NestedTooDeep, json_loaded, json_problem, text_problem

TYPE_NAMES = {
    str: "a text",
    bool: "true or false",
    int: "a number",
    float: "a number",
    list: "a list",
    dict: "an object",
    type(None): "null",
}


def text_decoded(data: bytes) -> str:
    """``data`` as UTF-8 text, a byte-order mark tolerated."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        line = data.count(b"\n", 0, error.start) + 1
        raise BridgeError(
            f"line {line}: not UTF-8 text (byte {error.start + 1} cannot be read as UTF-8)"
        ) from None


def json_parsed(text: str, *, what: str = "") -> object:
    """The JSON value ``text`` holds; a syntax error names its line and column, and a value
    nested past ``DEPTH_MAX`` is refused saying so."""
    try:
        return json_loaded(text)
    except json.JSONDecodeError as error:
        raise BridgeError(
            f"{what}line {error.lineno}, column {error.colno}: not JSON ({error.msg})"
        ) from None
    except NestedTooDeep as error:
        raise BridgeError(f"{what}{error}") from None


def kind(value) -> str:
    """How a problem names the type of ``value``."""
    return TYPE_NAMES.get(type(value), type(value).__name__)


def field_path(where: str, key: str) -> str:
    return f"{where}.{key}" if where else key


class Checks:
    """The problems found in one file, and the checks that find them.

    Each check returns the value to use (or a default), so a reader goes on through the whole
    file and refuses it once, with every problem, at the end.
    """

    def __init__(self) -> None:
        self.problems: list[str] = []

    def add(self, where: str, problem: str) -> None:
        self.problems.append(f"{where}: {problem}" if where else problem)

    def refuse(self) -> None:
        """Raise one ``BridgeError`` listing every problem, if any was found."""
        if self.problems:
            raise BridgeError("\n".join(self.problems))

    def object(self, value, where: str) -> dict | None:
        if isinstance(value, dict):
            return value
        self.add(where, f"must be an object, not {kind(value)}")
        return None

    def text(self, holder: dict, key: str, where: str, *, default: str | None = None) -> str:
        """A text field; missing or null gives ``default``, or is a problem if there is none."""
        value = holder.get(key)
        path = field_path(where, key)
        if value is None:
            if default is None:
                self.add(path, "missing")
                return ""
            return default
        if not isinstance(value, str):
            self.add(path, f"must be a text, not {kind(value)}")
            return ""
        if problem := text_problem(value):
            self.add(path, problem)
        return value

    def flag(self, holder: dict, key: str, where: str, *, default: bool) -> bool:
        """A true/false field; missing or null gives ``default``."""
        value = holder.get(key)
        if value is None:
            return default
        if not isinstance(value, bool):
            self.add(field_path(where, key), f"must be true or false, not {kind(value)}")
            return default
        return value

    def texts(self, holder: dict, key: str, where: str) -> tuple[str, ...]:
        """A list of texts; missing or null gives none."""
        value = holder.get(key)
        path = field_path(where, key)
        if value is None:
            return ()
        if not isinstance(value, list):
            self.add(path, f"must be a list of texts, not {kind(value)}")
            return ()
        for index, item in enumerate(value):
            if not isinstance(item, str):
                self.add(f"{path}[{index}]", f"must be a text, not {kind(item)}")
            elif problem := text_problem(item):
                self.add(f"{path}[{index}]", problem)
        return tuple(item for item in value if isinstance(item, str))

    def kept(self, holder: dict, where: str, *, mapped: frozenset | set = frozenset()) -> dict:
        """The fields of ``holder`` other than ``mapped``, exactly as read, each checked for what
        no JSON field can store."""
        kept = {}
        for key, value in holder.items():
            if key in mapped:
                continue
            if problem := json_problem(key) or json_problem(value):
                self.add(field_path(where, key), problem)
            kept[key] = value
        return kept


def fragment_of(holder: dict) -> dict | None:
    """The Silentstar fragment an exported entry carries (``extensions.silentstar``), if it is
    an object; anything else there is left in the entry's kept fields only."""
    extensions = holder.get("extensions")
    fragment = extensions.get("silentstar") if isinstance(extensions, dict) else None
    return fragment if isinstance(fragment, dict) else None
