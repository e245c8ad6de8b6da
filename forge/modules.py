"""The import allow-list: which standard modules a tool may import, and which names.

An allow-list by module name is not enough: `statistics.random`, `json.decoder`
or `re.enum` lead to other modules. A tool therefore never receives a real
module; it gets a read-only proxy exposing exactly the names listed here.
Left out on purpose, with the reason:

- `string.Formatter` — its `get_field` walks attributes unguarded (CVE-2023-41039,
  GHSA-hp3v-5vw7-fx9w).
- `functools.wraps`, `update_wrapper`, `WRAPPER_*` — copy arbitrary attributes by
  name (a reflection primitive); `singledispatch*` evaluate annotations.
- `typing.get_type_hints`, `ForwardRef`, `no_type_check*`, `reveal_type`,
  `get_overloads`, `clear_overloads` — evaluate strings as code or touch globals.
- `dataclasses.make_dataclass` — builds source text and execs it.
- `dataclasses.Field` — `dataclass` pastes a `Field`'s `name` into the source text
  it execs, and a subclass could answer any text for it (`field()` makes one; the
  guards refuse it as a base too, forge.policy.guards NOT_SUBCLASSABLE).
- `uuid.uuid1`, `uuid.getnode` — may spawn processes to find a MAC address.
- `re.template`, `re.purge` — deprecated / global cache.
- subclasses of `typing.NewType` — its `__init__` writes `__name__`,
  `__qualname__` and `__supertype__` into the instance, from what the name's own
  methods answer (the guards refuse it as a base, NOT_SUBCLASSABLE).

`dataclasses.dataclass` and `typing.TypedDict` are offered as forge.checked_types
gives them: `dataclass` too execs text made from field names, and `TypedDict`'s
functional form takes any string as one; both refuse a name that is not a plain
identifier (CHECKED). Offered checked too, because library code would hand the
tool a value no attribute lookup gives (the attacker pass atk2):
`typing.overload` (the real one returns a library function; forge's returns the
tool's own), `hashlib.file_digest` (calls a digest object the tool made with a
`memoryview`; forge's takes a digest name and a file from `open(path, 'rb')`),
`functools.cache` / `lru_cache` (of the tool's own functions only), and, from
forge.checked_text, `string.Template` (its `substitute` handed a callback of
string.py to a pattern the tool set) and `re.escape` (handed the real
`re._special_chars_map` to a `str` subclass's `translate`).

`os`, `os.path` and `pathlib` are not imported at all: their names below are
served by the path-gated shims of forge.shims, built per call (SHIMMED).
"""

from __future__ import annotations

import importlib
import types
from collections.abc import Mapping, Sequence

from forge.checked_text import CHECKED_TEXT
from forge.checked_types import CHECKED

ALLOWED: Mapping[str, Sequence[str]] = {
    "math": [
        "acos",
        "acosh",
        "asin",
        "asinh",
        "atan",
        "atan2",
        "atanh",
        "cbrt",
        "ceil",
        "comb",
        "copysign",
        "cos",
        "cosh",
        "degrees",
        "dist",
        "e",
        "erf",
        "erfc",
        "exp",
        "exp2",
        "expm1",
        "fabs",
        "factorial",
        "floor",
        "fmod",
        "frexp",
        "fsum",
        "gamma",
        "gcd",
        "hypot",
        "inf",
        "isclose",
        "isfinite",
        "isinf",
        "isnan",
        "isqrt",
        "lcm",
        "ldexp",
        "lgamma",
        "log",
        "log10",
        "log1p",
        "log2",
        "modf",
        "nan",
        "nextafter",
        "perm",
        "pi",
        "pow",
        "prod",
        "radians",
        "remainder",
        "sin",
        "sinh",
        "sqrt",
        "tan",
        "tanh",
        "tau",
        "trunc",
        "ulp",
    ],
    "statistics": [
        "NormalDist",
        "StatisticsError",
        "correlation",
        "covariance",
        "fmean",
        "geometric_mean",
        "harmonic_mean",
        "linear_regression",
        "mean",
        "median",
        "median_grouped",
        "median_high",
        "median_low",
        "mode",
        "multimode",
        "pstdev",
        "pvariance",
        "quantiles",
        "stdev",
        "variance",
    ],
    "json": ["JSONDecodeError", "JSONDecoder", "JSONEncoder", "dump", "dumps", "load", "loads"],
    "re": [
        "A",
        "ASCII",
        "DOTALL",
        "I",
        "IGNORECASE",
        "L",
        "LOCALE",
        "M",
        "MULTILINE",
        "Match",
        "NOFLAG",
        "Pattern",
        "RegexFlag",
        "S",
        "U",
        "UNICODE",
        "VERBOSE",
        "X",
        "compile",
        "error",
        "escape",
        "findall",
        "finditer",
        "fullmatch",
        "match",
        "search",
        "split",
        "sub",
        "subn",
    ],
    "datetime": [
        "MAXYEAR",
        "MINYEAR",
        "UTC",
        "date",
        "datetime",
        "time",
        "timedelta",
        "timezone",
        "tzinfo",
    ],
    "collections": [
        "ChainMap",
        "Counter",
        "OrderedDict",
        "UserDict",
        "UserList",
        "UserString",
        "defaultdict",
        "deque",
        "namedtuple",
    ],
    "itertools": [
        "accumulate",
        "chain",
        "combinations",
        "combinations_with_replacement",
        "compress",
        "count",
        "cycle",
        "dropwhile",
        "filterfalse",
        "groupby",
        "islice",
        "pairwise",
        "permutations",
        "product",
        "repeat",
        "starmap",
        "takewhile",
        "tee",
        "zip_longest",
    ],
    "functools": [
        "cache",
        "cached_property",
        "cmp_to_key",
        "lru_cache",
        "partial",
        "partialmethod",
        "reduce",
        "total_ordering",
    ],
    "string": [
        "Template",
        "ascii_letters",
        "ascii_lowercase",
        "ascii_uppercase",
        "capwords",
        "digits",
        "hexdigits",
        "octdigits",
        "printable",
        "punctuation",
        "whitespace",
    ],
    "textwrap": ["TextWrapper", "dedent", "fill", "indent", "shorten", "wrap"],
    "csv": [
        "Dialect",
        "DictReader",
        "DictWriter",
        "Error",
        "QUOTE_ALL",
        "QUOTE_MINIMAL",
        "QUOTE_NONE",
        "QUOTE_NONNUMERIC",
        "Sniffer",
        "excel",
        "excel_tab",
        "reader",
        "unix_dialect",
        "writer",
    ],
    "decimal": [
        "BasicContext",
        "Clamped",
        "Context",
        "ConversionSyntax",
        "Decimal",
        "DecimalException",
        "DecimalTuple",
        "DefaultContext",
        "DivisionByZero",
        "DivisionImpossible",
        "DivisionUndefined",
        "ExtendedContext",
        "FloatOperation",
        "Inexact",
        "InvalidContext",
        "InvalidOperation",
        "MAX_EMAX",
        "MAX_PREC",
        "MIN_EMIN",
        "MIN_ETINY",
        "Overflow",
        "ROUND_05UP",
        "ROUND_CEILING",
        "ROUND_DOWN",
        "ROUND_FLOOR",
        "ROUND_HALF_DOWN",
        "ROUND_HALF_EVEN",
        "ROUND_HALF_UP",
        "ROUND_UP",
        "Rounded",
        "Subnormal",
        "Underflow",
        "getcontext",
        "localcontext",
        "setcontext",
    ],
    "fractions": ("Fraction",),
    "random": [
        "Random",
        "betavariate",
        "choice",
        "choices",
        "expovariate",
        "gammavariate",
        "gauss",
        "getrandbits",
        "lognormvariate",
        "normalvariate",
        "paretovariate",
        "randbytes",
        "randint",
        "random",
        "randrange",
        "sample",
        "seed",
        "shuffle",
        "triangular",
        "uniform",
        "vonmisesvariate",
        "weibullvariate",
    ],
    "hashlib": [
        "algorithms_available",
        "algorithms_guaranteed",
        "blake2b",
        "blake2s",
        "file_digest",
        "md5",
        "new",
        "pbkdf2_hmac",
        "sha1",
        "sha224",
        "sha256",
        "sha384",
        "sha3_224",
        "sha3_256",
        "sha3_384",
        "sha3_512",
        "sha512",
        "shake_128",
        "shake_256",
    ],
    "uuid": [
        "NAMESPACE_DNS",
        "NAMESPACE_OID",
        "NAMESPACE_URL",
        "NAMESPACE_X500",
        "RESERVED_FUTURE",
        "RESERVED_MICROSOFT",
        "RESERVED_NCS",
        "RFC_4122",
        "SafeUUID",
        "UUID",
        "uuid3",
        "uuid4",
        "uuid5",
    ],
    "typing": [
        "AbstractSet",
        "Annotated",
        "Any",
        "AnyStr",
        "Callable",
        "ClassVar",
        "Collection",
        "Container",
        "DefaultDict",
        "Deque",
        "Dict",
        "Final",
        "FrozenSet",
        "Generator",
        "Generic",
        "Hashable",
        "ItemsView",
        "Iterable",
        "Iterator",
        "KeysView",
        "List",
        "Literal",
        "Mapping",
        "MappingView",
        "MutableMapping",
        "MutableSequence",
        "MutableSet",
        "NamedTuple",
        "Never",
        "NewType",
        "NoReturn",
        "NotRequired",
        "Optional",
        "Protocol",
        "Required",
        "Reversible",
        "Self",
        "Sequence",
        "Set",
        "Sized",
        "Text",
        "Tuple",
        "Type",
        "TypeAlias",
        "TypeVar",
        "TypedDict",
        "Union",
        "ValuesView",
        "cast",
        "final",
        "overload",
    ],
    "net": ["NetError", "Response", "get", "post"],
    "dataclasses": [
        "FrozenInstanceError",
        "InitVar",
        "KW_ONLY",
        "MISSING",
        "asdict",
        "astuple",
        "dataclass",
        "field",
        "fields",
        "is_dataclass",
        "replace",
    ],
}

# Served by forge.shims, bound to the call's workspace; never the real modules.
SHIMMED: Mapping[str, Sequence[str]] = {
    "os": [
        "curdir",
        "extsep",
        "fspath",
        "getcwd",
        "linesep",
        "listdir",
        "makedirs",
        "mkdir",
        "name",
        "pardir",
        "path",
        "remove",
        "rename",
        "replace",
        "rmdir",
        "scandir",
        "sep",
        "stat",
        "unlink",
        "walk",
    ],
    "os.path": [
        "abspath",
        "basename",
        "commonpath",
        "curdir",
        "dirname",
        "exists",
        "extsep",
        "getmtime",
        "getsize",
        "isabs",
        "isdir",
        "isfile",
        "join",
        "normpath",
        "pardir",
        "relpath",
        "sep",
        "split",
        "splitext",
    ],
    "pathlib": ["Path", "PosixPath", "PurePath", "PurePosixPath"],
}
ALLOWED = {**ALLOWED, **SHIMMED}

# Modules of forge's own offered under another name. `net`'s functions here are
# unbound (they refuse); each sandbox child binds its own to its pipes
# (forge.child, forge.net_client).
SOURCES: Mapping[str, str] = {"net": "forge.net_unbound"}

ALLOWED_NAMES: Mapping[str, frozenset[str]] = {m: frozenset(n) for m, n in ALLOWED.items()}


def build_proxies() -> dict[str, types.SimpleNamespace]:
    """Import the allowed modules and return one read-only namespace per module.

    Called once in the sandbox helper; a missing name is an error, not a gap.
    """
    proxies: dict[str, types.SimpleNamespace] = {}
    for module_name, names in ALLOWED.items():
        if module_name in SHIMMED:
            continue  # per call: forge.shims.bind_shims
        module = importlib.import_module(SOURCES.get(module_name, module_name))
        attrs = {}
        for name in names:
            checked = CHECKED.get((module_name, name)) or CHECKED_TEXT.get((module_name, name))
            value = checked or getattr(module, name)
            if isinstance(value, types.ModuleType):
                raise RuntimeError(f"{module_name}.{name} is a module; not allowed")
            attrs[name] = value
        proxies[module_name] = types.SimpleNamespace(**attrs)
    return proxies


def allowed_modules_text() -> str:
    return ", ".join(sorted(ALLOWED))
