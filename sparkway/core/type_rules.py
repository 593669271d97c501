"""Type rules: the type of every expression node given its inputs' column types, and
the result types of built-in functions and reducers, side by side."""

from __future__ import annotations

import inspect
import typing
from typing import Any, Callable

from sparkway.core import dtypes as dt
from sparkway.core.dtypes import DType
from sparkway.core.expression import (
    Apply, BinOp, Call, Cast, Coalesce, ColumnRef, Const, Expr, FillError, GetItem, IfElse, IsNone,
    MakeTuple, MethodCall, PointerFrom, ReducerExpr, Require, UnOp, Unwrap, children,
)
from sparkway.errors import PlanError, PlanTypeError, UnknownColumnError, warn_user

Columns = list[dict[str, DType]]


class PaddedColumns(dict):
    """The columns of an outer join's pairs, with what padding did to them: ``sides``
    maps a side's id column (``_r_id``) to the types its columns had before they became
    optional for the pairs that side is missing from.  Where that id is known not to be
    None (``pw.require(..., pw.right.id)``), the side's row is there and so are its
    values, as in Pathway.

    >>> padded = PaddedColumns({"_r_b": dt.INT.with_optional(True)}, {"_r_id": {"_r_b": dt.INT}})
    >>> never_none([ColumnRef(None, "_r_id")], [padded])[0]["_r_b"] == dt.INT
    True
    """

    def __init__(self, columns: dict[str, DType], sides: dict[str, dict[str, DType]]) -> None:
        super().__init__(columns)
        self.sides = sides

    def copy(self) -> "PaddedColumns":
        return PaddedColumns(self, self.sides)


def column_type(ref: ColumnRef, inputs: Columns) -> DType:
    index = getattr(ref.table, "index", 0)
    if ref.name == "id":
        return dt.POINTER
    try:
        return inputs[index][ref.name]
    except KeyError:
        known = ", ".join(inputs[index]) or "none"
        raise UnknownColumnError(f"no column {ref.name!r} in the table (its columns: {known})") from None


def infer(expr: Expr, inputs: Columns) -> DType:
    """The DType of ``expr`` over inputs with the given columns."""
    if not isinstance(expr, (ColumnRef, Const)):
        _refuse_futures(expr, inputs)
    match expr:
        case ColumnRef():
            return column_type(expr, inputs)
        case Const(value):
            return dt.dtype_of_value(value)
        case BinOp(op, a, b):
            return _binop_type(op, infer(a, inputs), infer(b, inputs))
        case UnOp(op, a):
            return _unop_type(op, infer(a, inputs))
        case IfElse(condition, then, otherwise):
            check_condition(infer(condition, inputs), "First argument of pathway.if_else has to be bool, found {}.",
                            dt.python_name)
            in_then, in_otherwise = never_none_in_branches(condition)
            return dt.unify(infer(then, never_none(in_then, inputs)), infer(otherwise, never_none(in_otherwise, inputs)))
        case FillError(then, otherwise):
            return dt.unify(infer(then, inputs), infer(otherwise, inputs))
        case Coalesce(args):
            types = [infer(a, inputs) for a in args]
            result = types[0]
            for t in types[1:]:
                result = dt.unify(result, t)
            return result.with_optional(all(t.optional for t in types))
        case Require(value, args):  # the value is computed only where no arg is None
            return infer(value, never_none(list(args), inputs)).with_optional(True)
        case Unwrap(a):
            return infer(a, inputs).with_optional(False)
        case Cast(target, a, declared):
            source = infer(a, inputs)
            if declared and not (_within(target, source) or _within(source, target)):
                raise PlanTypeError(
                    f"Cannot change type from {source} to {target}.\n"
                    "pw.`declare_type` should be used only for type narrowing or type extending."
                )
            return target if declared else target.with_optional(target.optional or source.optional)
        case IsNone():
            return dt.BOOL
        case MakeTuple(args):
            return DType("tuple", tuple(infer(a, inputs) for a in args))
        case GetItem(a, key, default, checked):
            return _getitem_type(infer(a, inputs), key, default, checked, inputs)
        case Apply(fn, args, dtype, propagate_none):
            result = dtype if dtype is not None else return_type(fn)
            # a None argument skips the call and gives None
            return result.with_optional(True) if propagate_none and any(infer(a, inputs).optional for a in args) else result
        case Call(name, args, params):
            types = [infer(a, inputs) for a in args]
            _check_receiver(name, types)
            return FUNCTION_TYPES[name](types, params)
        case PointerFrom(args, optional):
            keys = [infer(a, inputs) for a in args]
            return dt.pointer_to(*(k.with_optional(False) if optional else k for k in keys)).with_optional(
                optional and any(k.optional for k in keys)
            )
        case ReducerExpr():
            raise PlanTypeError("reducers such as pw.reducers.sum can only be used in reduce()")
        case MethodCall():  # the API layer computes calls in the operations that can take them
            raise PlanError(
                f"{expr!r}: a method column can be called in select, with_columns, filter and reduce "
                "of a table; elsewhere (e.g. in a join), call it in a select of its table first"
            )
    raise PlanTypeError(f"unsupported expression {expr!r}")


def never_none(exprs: list[Expr], inputs: Columns) -> Columns:
    """``inputs`` with the columns among ``exprs`` taken as never None (in ``require``'s
    value, its arguments; in an ``if_else`` branch, see ``never_none_in_branches``)."""
    if not any(isinstance(e, ColumnRef) for e in exprs):
        return inputs
    narrowed = [columns.copy() for columns in inputs]
    for expr in exprs:
        if isinstance(expr, ColumnRef) and expr.name != "id":
            columns = narrowed[getattr(expr.table, "index", 0)]
            if expr.name in columns:
                columns[expr.name] = columns[expr.name].with_optional(False)
            if isinstance(columns, PaddedColumns):
                columns.update(columns.sides.get(expr.name, {}))
    return narrowed


def never_none_in_branches(condition: Expr) -> tuple[list[Expr], list[Expr]]:
    """As Pathway: ``if_else(x.is_not_none(), then, ...)`` takes ``x`` as never None in
    ``then``, and ``if_else(x.is_none(), ..., otherwise)`` in ``otherwise``."""
    if isinstance(condition, IsNone):
        return ([condition.arg], []) if condition.negate else ([], [condition.arg])
    return [], []


def refuse_future(kind: DType) -> None:
    """A future (a fully async UDF's result) cannot be a key (groupby, sort, deduplicate...)."""
    if kind.is_future:
        raise PlanTypeError(
            f"Using column of type {dt.python_name(kind)} is not allowed here."
            " Consider applying `await_futures()` to the table first."
        )


def _future_operand(expr: Expr, inputs: Columns) -> DType | None:
    """The type of an operand of ``expr`` that is a future (a column of one, or a fully
    async UDF's call), if any."""
    for operand in children(expr):
        match operand:
            case ColumnRef():
                kind = column_type(operand, inputs)
            case Apply(_, _, DType() as kind):
                pass
            case _:
                continue
        if kind.is_future:
            return kind
    return None


_PATHWAY_NAMES = {
    PointerFrom: "pointer_from", MakeTuple: "make_tuple", Coalesce: "coalesce", Require: "require",
    Cast: "cast", Unwrap: "unwrap", FillError: "fill_error", GetItem: "get",
}


def _refuse_futures(expr: Expr, inputs: Columns) -> None:
    """As Pathway, no operation takes a future: ``await_futures()`` first."""
    future = _future_operand(expr, inputs)
    if future is None or (isinstance(expr, Apply) and expr.dtype is not None and expr.dtype.is_future):
        return  # fully async UDFs chain: one takes another's future
    match expr:
        case BinOp(op, a, b):
            kinds = ", ".join(dt.python_name(infer(x, inputs)) for x in (a, b))
            raise PlanTypeError(f"Pathway does not support using binary operator {_OPERATOR_NAMES[op]} on columns of types {kinds}.")
        case IfElse(_, then, otherwise):
            kinds = " and ".join(dt.python_name(infer(x, inputs)) for x in (then, otherwise))
            raise PlanTypeError(f"Cannot perform pathway.if_else on columns of types {kinds}.")
        case IsNone(_, negated):
            name = "is_not_none" if negated else "is_none"
        case Apply(fn):
            name = "apply_async" if inspect.iscoroutinefunction(inspect.unwrap(fn)) else "apply"
        case Call(function):
            name = function
        case _:
            name = _PATHWAY_NAMES.get(type(expr), type(expr).__name__.lower())
    raise PlanTypeError(
        f"Cannot perform pathway.{name} when column of type {dt.python_name(future)} is involved."
        " Consider applying `await_futures()` to the table used here."
    )


def return_type(fn: Callable[..., Any]) -> DType:
    """The declared return type of a Python function, or Any; a class makes values of
    its own type (``pw.apply(float, ...)`` is a float, as in Pathway)."""
    if inspect.isclass(fn):
        return dt.dtype_of(fn)
    try:
        hints = typing.get_type_hints(fn)
    except Exception:  # builtins and lambdas without hints
        hints = {}
    if "return" in hints:
        return dt.dtype_of(hints["return"])
    try:
        annotation = inspect.signature(fn).return_annotation
    except (TypeError, ValueError):
        return dt.ANY
    if isinstance(annotation, str):  # postponed (``from __future__ import annotations``), and
        # get_type_hints failed on another parameter's: the return annotation alone
        try:
            annotation = eval(annotation, dict(getattr(fn, "__globals__", {})))
        except Exception:
            pass
    return dt.ANY if annotation is inspect.Signature.empty else dt.dtype_of(annotation)


_COMPARISONS = {"==", "!=", "<", "<=", ">", ">="}


_OPERATOR_NAMES = {
    "==": "eq", "!=": "ne", "<": "lt", "<=": "le", ">": "gt", ">=": "ge", "+": "add", "-": "sub",
    "*": "mul", "@": "matmul", "/": "truediv", "//": "floordiv", "%": "mod", "**": "pow", "&": "and_",
    "|": "or_", "^": "xor", "<<": "lshift", ">>": "rshift",
}


#: Pathway's operators on its scalar types: the result type of each pair of operand types
#: an operator takes.  Operands that may be None are refused, but for ``==`` and ``!=``, as in
#: Pathway (``pw.require``, ``if_else(x.is_not_none(), ...)`` and ``coalesce`` take None out)
_I, _F, _B, _S, _Y = dt.INT, dt.FLOAT, dt.BOOL, dt.STR, dt.BYTES
_DN, _DU, _D = dt.DATE_TIME_NAIVE, dt.DATE_TIME_UTC, dt.DURATION
_NUMBERS = {(_I, _I): _I, (_I, _F): _F, (_F, _I): _F, (_F, _F): _F}
_ORDERED = {(t, t): _B for t in (_B, _S, _I, _F, _D, _DN, _DU)} | {(_I, _F): _B, (_F, _I): _B}
_SCALAR_OPERATORS: dict[str, dict[tuple[DType, DType], DType]] = {
    "==": _ORDERED | {(_Y, _Y): _B}, "!=": _ORDERED | {(_Y, _Y): _B},
    "<": _ORDERED, "<=": _ORDERED, ">": _ORDERED, ">=": _ORDERED,
    "+": _NUMBERS | {(_S, _S): _S, (_D, _D): _D, (_D, _DN): _DN, (_D, _DU): _DU, (_DN, _D): _DN, (_DU, _D): _DU},
    "-": _NUMBERS | {(_D, _D): _D, (_DN, _D): _DN, (_DU, _D): _DU, (_DN, _DN): _D, (_DU, _DU): _D},
    "*": _NUMBERS | {(_S, _I): _S, (_I, _S): _S, (_D, _I): _D, (_I, _D): _D, (_D, _F): _D, (_F, _D): _D},
    "/": {pair: _F for pair in _NUMBERS} | {(_D, _D): _F, (_D, _I): _D, (_D, _F): _D},
    "//": _NUMBERS | {(_D, _D): _I, (_D, _I): _D},
    "%": _NUMBERS | {(_D, _D): _D},
    "**": dict(_NUMBERS),
    "&": {(_B, _B): _B, (_I, _I): _I}, "|": {(_B, _B): _B, (_I, _I): _I}, "^": {(_B, _B): _B, (_I, _I): _I},
    "<<": {(_I, _I): _I}, ">>": {(_I, _I): _I},
}
_SCALARS = {_I, _F, _B, _S, _Y, _DN, _DU, _D}
#: unary operators: the types each takes (its result has the operand's type)
_UNARY = {"neg": {_I, _F, _D}, "not": {_B}, "abs": {_I, _F}}
_UNARY_NAMES = {"neg": "neg", "not": "inv"}


def _binop_type(op: str, a: DType, b: DType) -> DType:
    optional = a.optional or b.optional
    base_a, base_b = a.with_optional(False), b.with_optional(False)
    if base_a in _SCALARS and base_b in _SCALARS:
        result = _SCALAR_OPERATORS[op].get((base_a, base_b))
        if result is None or (optional and op not in ("==", "!=")):
            raise _unsupported(op, a, b)
        return result
    if base_a.is_array or base_b.is_array:
        return _array_binop_type(op, a, b)
    if base_a.is_pointer and base_b.is_pointer and not dt.related(base_a, base_b):  # Pathway's words
        raise PlanTypeError(
            f"Incompatible types in for a binary operator.\nThe types are: {dt.engine_name(base_a)} and "
            f"{dt.engine_name(base_b)}. You might try casting the expressions to Any type to circumvent this, "
            "but this is most probably an error."
        )
    if op in _COMPARISONS:
        if not dt.related(base_a, base_b) or (op not in ("==", "!=") and _has_optional_items(base_a, base_b)):
            raise _unsupported(op, a, b)
        # None == None holds and None == 1 does not: equality is never None (as in Pathway)
        return dt.BOOL if op in ("==", "!=") else dt.BOOL.with_optional(optional)
    if op in ("&", "|", "^"):
        return dt.BOOL.with_optional(optional) if base_a == dt.BOOL else base_a.with_optional(optional)
    if op in ("<<", ">>"):
        if {base_a, base_b} <= {dt.INT, dt.ANY}:
            return dt.INT.with_optional(optional)
        raise _unsupported(op, a, b)
    if op == "/":
        if base_a == dt.DURATION:
            return dt.DURATION.with_optional(optional)
        return dt.FLOAT.with_optional(optional)
    if op in ("+", "-") and base_b == dt.DURATION:
        return base_a.with_optional(optional)
    if op == "//" and base_a == dt.DURATION:
        return dt.INT.with_optional(optional) if base_b == dt.DURATION else dt.DURATION.with_optional(optional)
    if base_a == dt.ANY or base_b == dt.ANY:
        return dt.ANY.with_optional(optional)
    try:
        return dt.unify(base_a, base_b).with_optional(optional)
    except PlanTypeError:
        raise _unsupported(op, a, b) from None


def _unop_type(op: str, kind: DType) -> DType:
    if kind.is_array:
        raise PlanTypeError(f"unary operator {op} is not supported on arrays: compute it in a pw.udf with numpy")
    base = kind.with_optional(False)
    if base in _SCALARS and (base not in _UNARY[op] or kind.optional):
        if op == "abs":  # Pathway's words: abs() is num.abs()
            raise AttributeError(f"Column of type {dt.python_name(kind)} has no attribute num.abs with arguments of type [].")
        raise PlanTypeError(
            f"Pathway does not support using unary operator {_UNARY_NAMES[op]} on column of type {dt.python_name(kind)}."
        )
    return dt.BOOL.with_optional(kind.optional) if op == "not" else kind


def check_condition(kind: DType, message: str, name: Callable[[DType], str]) -> None:
    """A condition (``if_else``'s, ``filter``'s) is a bool that cannot be None, as in
    Pathway; ``message`` names the type found with ``name``."""
    if kind != dt.BOOL and kind.with_optional(False) != dt.ANY:
        raise PlanTypeError(message.format(name(kind)))


def _array_binop_type(op: str, a: DType, b: DType) -> DType:
    """Arrays compare for equality, and multiply as matrices (``a @ b``, numpy's rules,
    of arrays that are not optional); the result's shape and element type are known only
    when it is computed, as in Pathway.  Other operators are numpy's business: use a UDF."""
    if op in ("==", "!=") and dt.related(a, b):
        return dt.BOOL
    if op == "@" and a.is_array and b.is_array and not (a.optional or b.optional):
        return dt.ANY_ARRAY
    raise PlanTypeError(
        f"binary operator {_OPERATOR_NAMES[op]} is not supported on columns of types "
        f"{dt.python_name(a)}, {dt.python_name(b)}: arrays take == and != and, when not optional, "
        "@ (matrix multiplication); compute anything else in a pw.udf with numpy"
    )


def _has_optional_items(a: DType, b: DType) -> bool:
    """Whether tuples to be ordered hold optional items (None has no order, as in Pathway)."""
    return any(item.optional for t in (a, b) if t.name == "tuple" for item in t.items)


def _unsupported(op: str, a: DType, b: DType) -> PlanTypeError:
    # Pathway's sentence (programs match on it), then what to do
    return PlanTypeError(
        f"Pathway does not support using binary operator {_OPERATOR_NAMES[op]} on columns of types "
        f"{dt.python_name(a)}, {dt.python_name(b)}. Convert one side first (pw.cast, .to_string())."
    )


def _getitem_type(container: DType, key: Expr, default: Expr | None, checked: bool, inputs: Columns) -> DType:
    base = container.with_optional(False)
    if base == dt.JSON:
        return _json_item_type(container, default, checked, inputs)
    if base.name == "list":
        item = base.items[0]
        return item.with_optional(item.optional or not checked)
    if base.name == "tuple":
        return _tuple_item_type(base, key, default, checked, inputs)
    if base.is_array:
        if container.optional:
            raise PlanTypeError(f"cannot index a column of type {container}: unwrap it first (pw.unwrap)")
        return dt.array_item(base)
    return dt.ANY.with_optional(True)


def tuple_position(tuple_type: DType, key: Expr) -> int | None:
    """The field a constant index of a tuple reads (negative ones count from the end);
    None when out of range."""
    n = len(tuple_type.items)
    position = key.value + n if key.value < 0 else key.value
    return position if 0 <= position < n else None


def _tuple_item_type(base: DType, key: Expr, default: Expr | None, checked: bool, inputs: Columns) -> DType:
    """Pathway's rules: a constant index out of range is an IndexError with ``[]`` and
    the default with ``.get()`` (and a warning); any index of a tuple whose items share
    a type gives that type (optional with ``.get()``), else Any."""
    default_type = infer(default, inputs) if default is not None else dt.ANY.with_optional()
    if isinstance(key, Const) and isinstance(key.value, int):
        position = tuple_position(base, key)
        if position is not None:
            return base.items[position]
        message = f"Index {key.value} out of range for a tuple of type {dt.python_type(base)}."
        if checked:
            raise IndexError(message)
        warn_user(f"{message} Consider using just the default value without .get().")
        return default_type
    if len(set(base.items)) == 1:
        item = base.items[0]
        return item if checked else dt.unify(item, default_type)
    return dt.ANY.with_optional(not checked)


def _json_item_type(container: DType, default: Expr | None, checked: bool, inputs: Columns) -> DType:
    """As Pathway: ``json[key]`` is a Json (null when the key is missing), ``json.get(key)``
    an optional Json (None when missing) unless a Json default replaces it; an optional
    Json must be unwrapped first (the messages are Pathway's)."""
    optional_json = dt.Json | None
    if container.optional:
        raise PlanTypeError(f"Cannot get from {optional_json}.")
    if checked:
        return dt.JSON
    if isinstance(default, Const) and isinstance(default.value, (dict, list, dt.Json, type(None))):
        return dt.JSON.with_optional(default.value is None)
    given = infer(default, inputs) if default is not None else dt.JSON.with_optional(True)
    if given.with_optional(False) != dt.JSON:
        found = type(default.value) if isinstance(default, Const) else dt.python_name(given)
        raise PlanTypeError(f"Default must be of type {optional_json}, found {found}.")
    return given


def _same(types: list[DType], params: tuple) -> DType:
    return types[0]


def _fixed(result: DType) -> Callable[[list[DType], tuple], DType]:
    def rule(types: list[DType], params: tuple) -> DType:
        return result.with_optional(any(t.optional for t in types))
    return rule


def _parse(result: DType) -> Callable[[list[DType], tuple], DType]:
    def rule(types: list[DType], params: tuple) -> DType:
        return result.with_optional(bool(params and params[0]) or types[0].optional)
    return rule


def _json_as(result: DType) -> Callable[[list[DType], tuple], DType]:
    """Json to ``result``; optional unless a non-optional default (of a type that converts
    to ``result``) replaces nulls."""
    def rule(types: list[DType], params: tuple) -> DType:
        source, *default = types
        if source.name not in ("Json", "Any"):
            raise PlanTypeError(
                f"as_{result.name}() can only be applied to JSON columns, but column has type "
                f"{dt.python_name(source)}. Convert other types with .to_string() or pw.cast()"
            )
        if not default:
            return result.with_optional(True)
        given = default[0].with_optional(False)
        if given != result and not (result == dt.FLOAT and given == dt.INT):
            raise PlanTypeError(
                f"type of default {dt.python_name(given)} is not compatible with {dt.python_name(result)}."
                f" Give a default of type {result.name}"
            )
        return result.with_optional(default[0].optional)
    return rule


def strptime_zoned(fmt: str, contains_timezone: bool | None) -> bool:
    """Whether ``dt.strptime(fmt)`` gives a DateTimeUtc: as said, or else when the format
    reads an offset or a zone (``%z``, ``%:z``, ``%Z``).

    >>> strptime_zoned("%Y-%m-%d %H:%M:%S%:z", None), strptime_zoned("%Y", None)
    (True, False)
    """
    if contains_timezone is not None:
        return contains_timezone
    return fmt is not None and any(directive in fmt for directive in ("%z", "%:z", "%Z"))


def _strptime(types: list[DType], params: tuple) -> DType:
    zoned = strptime_zoned(*params)
    return (dt.DATE_TIME_UTC if zoned else dt.DATE_TIME_NAIVE).with_optional(types[0].optional)


_DATE_TIMES = (dt.DATE_TIME_NAIVE, dt.DATE_TIME_UTC)
# the types of the column a ``.dt`` method is called on (for the others: date-times)
_DT_RECEIVERS: dict[str, tuple[DType, ...]] = {
    **dict.fromkeys(("dt.to_utc", "dt.add_duration_in_timezone", "dt.subtract_duration_in_timezone",
                     "dt.subtract_date_time_in_timezone"), (dt.DATE_TIME_NAIVE,)),
    "dt.to_naive_in_timezone": (dt.DATE_TIME_UTC,),
    "dt.strptime": (dt.STR,),
    **dict.fromkeys(("dt.from_timestamp", "dt.utc_from_timestamp"), (dt.INT, dt.FLOAT)),
    "dt.to_duration": (dt.INT,),
    **dict.fromkeys(("dt.weeks", "dt.days", "dt.hours", "dt.minutes", "dt.seconds", "dt.milliseconds",
                     "dt.microseconds", "dt.nanoseconds"), (dt.DURATION,)),
}


def _check_receiver(name: str, types: list[DType]) -> None:
    """A ``.dt``, ``.str`` or ``.num`` method called on a column of a type it does not
    take is an AttributeError when the expression is built, worded as Pathway's."""
    if not types:
        return
    receiver = types[0].with_optional(False)
    if name.startswith("dt."):
        takes = _DT_RECEIVERS.get(name, _DATE_TIMES)
    elif name.startswith(("str.", "num.")):
        takes = {dt.STR} if name.startswith("str.") else {dt.INT, dt.FLOAT}
    else:
        return
    # a receiver that may be None is refused, as in Pathway, but by fill_na
    if receiver == dt.ANY or (receiver in takes and (not types[0].optional or name == "num.fill_na")):
        return
    others = ", ".join(dt.python_name(t) for t in types[1:])
    raise AttributeError(f"Column of type {dt.python_name(types[0])} has no attribute {name} with arguments "
                         f"of type [{others}].")


# One entry per built-in function: how its result type follows from its arguments'.
FUNCTION_TYPES: dict[str, Callable[[list[DType], tuple], DType]] = {
    "str.lower": _same, "str.upper": _same, "str.reversed": _same, "str.strip": _same,
    "str.replace": _same, "str.slice": _same,
    "str.len": _fixed(dt.INT), "str.count": _fixed(dt.INT), "str.find": _fixed(dt.INT),
    "str.rfind": _fixed(dt.INT), "str.swapcase": _same, "str.title": _same, "str.removeprefix": _same,
    "str.removesuffix": _same,
    "str.startswith": _fixed(dt.BOOL), "str.endswith": _fixed(dt.BOOL),
    "str.parse_int": _parse(dt.INT), "str.parse_float": _parse(dt.FLOAT),
    "str.parse_bool": _parse(dt.BOOL),
    "dt.year": _fixed(dt.INT), "dt.month": _fixed(dt.INT), "dt.day": _fixed(dt.INT),
    "dt.hour": _fixed(dt.INT), "dt.minute": _fixed(dt.INT), "dt.second": _fixed(dt.INT),
    "dt.millisecond": _fixed(dt.INT), "dt.microsecond": _fixed(dt.INT), "dt.nanosecond": _fixed(dt.INT),
    "dt.weekday": _fixed(dt.INT),
    "dt.timestamp": lambda types, params: dt.INT if params[0] is None else dt.FLOAT,
    "dt.strftime": _fixed(dt.STR), "dt.strptime": _strptime, "dt.floor": _same, "dt.round": _same,
    "dt.to_utc": _fixed(dt.DATE_TIME_UTC), "dt.from_timestamp": _fixed(dt.DATE_TIME_NAIVE),
    "dt.to_naive_in_timezone": _fixed(dt.DATE_TIME_NAIVE), "dt.add_duration_in_timezone": _fixed(dt.DATE_TIME_NAIVE),
    "dt.subtract_duration_in_timezone": _fixed(dt.DATE_TIME_NAIVE),
    "dt.subtract_date_time_in_timezone": _fixed(dt.DURATION),
    "dt.utc_from_timestamp": _fixed(dt.DATE_TIME_UTC),
    "dt.to_duration": _fixed(dt.DURATION),
    "dt.weeks": _fixed(dt.INT), "dt.days": _fixed(dt.INT), "dt.hours": _fixed(dt.INT), "dt.minutes": _fixed(dt.INT),
    "dt.seconds": _fixed(dt.INT), "dt.milliseconds": _fixed(dt.INT), "dt.microseconds": _fixed(dt.INT),
    "dt.nanoseconds": _fixed(dt.INT),
    "num.round": _same,
    "num.fill_na": lambda types, params: types[0].with_optional(False),
    "window.starts": lambda types, params: dt.DType("list", (types[0].with_optional(False),)),
    "processing_time": _fixed(dt.DATE_TIME_UTC),
    "to_string": lambda types, params: dt.STR,
    "json_as_int": _json_as(dt.INT), "json_as_float": _json_as(dt.FLOAT),
    "json_as_str": _json_as(dt.STR), "json_as_bool": _json_as(dt.BOOL),
}


def reducer_type(kind: str, args: list[DType], params: tuple) -> DType:
    """The type of a reducer's result over arguments of the given types."""
    if kind not in REDUCER_TYPES:
        raise PlanError(f"unknown reducer {kind!r}; known: {', '.join(sorted(REDUCER_TYPES))}")
    for arg in args:
        if arg.is_future:
            raise PlanTypeError(
                f"Cannot perform pathway.reducers.{kind} when column of type {dt.python_name(arg)} is involved."
                " Consider applying `await_futures()` to the table used here"
            )
    return REDUCER_TYPES[kind](args, params)


def _tuple_type(args: list[DType], params: tuple) -> DType:
    skip_nones = bool(params and params[0])
    return DType("list", (args[0].with_optional(args[0].optional and not skip_nones),))


def _summed(kind: DType) -> DType:
    """The type of a sum: numbers and arrays, never None, as in Pathway (whose ``avg`` is
    a sum, and says so)."""
    if not (kind in (dt.INT, dt.FLOAT) or kind.is_array or kind.with_optional(False) == dt.ANY):
        raise PlanTypeError(f"Pathway does not support using reducer sum on column of type {dt.engine_name(kind)}.")
    return kind


def _average(kind: DType) -> DType:
    _summed(kind)
    return dt.FLOAT


def _ndarray_type(args: list[DType], params: tuple) -> DType:
    skip_nones = bool(params and params[0])
    base = args[0].with_optional(False)
    if (args[0].optional and not skip_nones) or not (base.is_numeric or base.is_array):
        raise PlanTypeError(
            f"Pathway does not support using reducer ndarray on column of type {dt.engine_name(args[0])}."
            + (" Give skip_nones=True to leave None out." if args[0].optional else "")
        )
    return dt.ANY_ARRAY


# One entry per reducer: its result type from its arguments' (kernels: engine/kernels/reduce.py).
REDUCER_TYPES: dict[str, Callable[[list[DType], tuple], DType]] = {
    "count": lambda a, p: dt.INT,
    "count_distinct": lambda a, p: dt.INT,
    "sum": lambda a, p: _summed(a[0]),
    "avg": lambda a, p: _average(a[0]),
    "min": lambda a, p: a[0],
    "max": lambda a, p: a[0],
    "any": lambda a, p: a[0],
    "unique": lambda a, p: a[0],
    "earliest": lambda a, p: a[0],
    "latest": lambda a, p: a[0],
    "argmin": lambda a, p: a[1] if len(a) > 1 else dt.POINTER,
    "argmax": lambda a, p: a[1] if len(a) > 1 else dt.POINTER,
    "tuple": _tuple_type,
    "sorted_tuple": _tuple_type,
    "ndarray": _ndarray_type,
    # custom reducers: params[0] is the combine function or the accumulator class
    "stateful": lambda a, p: return_type(p[0]),
    "accumulator": lambda a, p: return_type(p[0].compute_result),
}


def _within(a: dt.DType, b: dt.DType) -> bool:
    """Whether every value of type ``a`` is one of type ``b`` (an int is a float)."""
    if a.optional and not b.optional:
        return False
    base_a, base_b = a.with_optional(False), b.with_optional(False)
    if base_a.items or base_b.items:
        return dt.related(base_a, base_b)
    return base_a == base_b or base_b == dt.ANY or (base_a, base_b) == (dt.INT, dt.FLOAT)
