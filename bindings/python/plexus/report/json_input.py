"""Reading the report's JSON inputs with errors that name the file and the key.

Every check raises ReportInputError, whose message starts with the file's path and then the
key path inside it ("report.json: devices[0].steps[3].bytes: missing key 'scratch'"), so a
user can find the bad value without reading a traceback."""
import json
import numbers


class ReportInputError(ValueError):
    """An input file of plexus.report that cannot be read or does not have the expected
    shape. `str(error)` names the file and the key path inside it."""


def read_json(path):
    """The parsed JSON of the file at `path` (str or path-like). Raises ReportInputError
    naming the file when it cannot be read (missing, a folder, no permission) or is not
    JSON (with the line and column of the first error)."""
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except (OSError, UnicodeDecodeError) as e:
        raise ReportInputError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise ReportInputError(f"{path}: not JSON: {e.msg} at line {e.lineno} column {e.colno}") from None


class Where:
    """A position in a parsed JSON file: the file's path and the key path to a value.
    `where.key("devices").index(0)` is "devices[0]"; `where.fail(msg)` raises
    ReportInputError("<path>: devices[0]: <msg>")."""

    def __init__(self, path, keys=""):
        self.path, self.keys = str(path), keys

    def key(self, name):
        """The position of member `name` of the object here."""
        return Where(self.path, f"{self.keys}.{name}" if self.keys else name)

    def index(self, i):
        """The position of element `i` of the array here."""
        return Where(self.path, f"{self.keys}[{i}]")

    def fail(self, message):
        """Raises ReportInputError naming the file, this key path and `message`."""
        where = f"{self.path}: {self.keys}: " if self.keys else f"{self.path}: "
        raise ReportInputError(where + message)


def _type_name(value):
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(value), "a number")


def member(obj, name, where, kind):
    """`obj[name]`, checked: `obj` must be a JSON object holding `name`, and the value of
    kind `kind`: "object", "array", "string", "number" (int or float), "count" (an integer
    >= 0) or "int" (any integer). Raises ReportInputError naming the file and key."""
    if not isinstance(obj, dict):
        where.fail(f"expected an object, found {_type_name(obj)}")
    if name not in obj:
        where.fail(f"missing key '{name}'")
    return check_value(obj[name], where.key(name), kind)


_KIND_NAMES = {"object": "an object", "array": "an array", "string": "a string", "number": "a number",
               "count": "an integer >= 0", "int": "an integer"}


def check_value(value, where, kind):
    """`value` if it is of kind `kind` (as in member()), else ReportInputError at `where`."""
    is_int = isinstance(value, int) and not isinstance(value, bool)
    ok = {"object": isinstance(value, dict), "array": isinstance(value, list), "string": isinstance(value, str),
          "number": isinstance(value, numbers.Real) and not isinstance(value, bool),
          "count": is_int and value >= 0, "int": is_int}[kind]
    if not ok:
        where.fail(f"expected {_KIND_NAMES[kind]}, found {json.dumps(value)[:60]}")
    return value
