"""Parse and execute a space file under a device and settings, turning every failure into a
:class:`~beast.errors.BeastError` at the user's file:line:col."""
from __future__ import annotations

import ast
import codecs
import io
import os
import sys
import tokenize
import types
from ..ir.record import field, record

from ..errors import BeastError, SettingError, SpaceError, frame_position
from ..expr.nodes import Expr, IteratorTruthError
from ..lang.vocabulary import __all__ as VOCABULARY, Condition, compiling

IMPORT_HINT = "add `from beast import *` at the top of the file"


@record
class LoadedModule:
    """A space file after execution: its text, AST, namespace and what it declared."""
    filename: str
    source: str
    namespace: dict
    settings: dict            # name -> SettingDecl
    conditions: list          # Condition objects in creation order
    lines: list = field(default_factory=list)
    _tree: ast.Module | None = field(default=None, repr=False)
    _context: object = field(default=None, repr=False)

    @property
    def device(self):
        """The DeviceProfile (resolved when first asked for: a space that reads no device
        limit does not import the profile tables, beast.lang.devices)."""
        return self._context.device()

    @property
    def tree(self) -> ast.Module:
        """The file's AST, parsed when first asked for: only @iterator/@condition functions and
        error messages need it, and parsing costs as much as compiling."""
        if self._tree is None:
            self._tree = ast.parse(self.source, self.filename)
        return self._tree


def _user_frame_line(tb, filename):
    """The line of the deepest traceback entry that is in the user's file."""
    return _user_frame_position(tb, filename)[0]


def _user_frame_position(tb, filename):
    """(line, col, end_col) of the operation the deepest traceback entry in the user's file was
    running (the columns None where Python does not know them)."""
    where = (None, None, None)
    while tb is not None:
        if os.path.abspath(tb.tb_frame.f_code.co_filename) == filename:
            where = frame_position(tb)[1:]
        tb = tb.tb_next
    return where


def _callee(call: ast.Call):
    """The name a call calls: ``f`` of ``f(...)`` and of ``math.f(...)``."""
    return getattr(call.func, "id", getattr(call.func, "attr", None))


def _nodes_on_line(tree, lineno, types_):
    return [n for n in ast.walk(tree) if isinstance(n, types_) and getattr(n, "lineno", None) == lineno]


def _truth_error(err, tree, filename, lineno):
    """Explain which construct asked for the truth value of an iterator expression."""
    def membership(node):
        return any(isinstance(o, (ast.In, ast.NotIn)) for o in node.ops)

    candidates = [      # (node type, which of them, message, hint): the first that matches names the error
        (ast.Compare, membership, "`in` on an iterator value at module level",
         "test membership in a @condition function"),
        (ast.If, None, "module-level `if` on an iterator value", "use select() or a @condition"),
        (ast.While, None, "module-level `while` on an iterator value", "use select() or a @condition"),
        (ast.IfExp, None, "conditional expression on an iterator value", "use select(cond, a, b)"),
        (ast.BoolOp, None, "`and`/`or` on an iterator value",
         "use & and | between truth values: (a > 1) & (b != 0) (or a @condition)"),
        (ast.Compare, lambda n: len(n.ops) > 1, "chained comparison on iterator values", "write (a < b) & (b < c)"),
        (ast.UnaryOp, lambda n: isinstance(n.op, ast.Not), "`not` on an iterator value",
         "use ~ on a truth value: ~(a > 1) (or a @condition)"),
        (ast.Assert, None, "`assert` on an iterator value", "use a @condition"),
        (ast.Call, None, "an iterator value used where a plain integer is needed", err.hint),
    ]
    for type_, which, message, hint in candidates:
        for node in _nodes_on_line(tree, lineno, type_):
            if which is not None and not which(node):
                continue
            target = node.test if isinstance(node, (ast.If, ast.While, ast.IfExp, ast.Assert)) else node
            return SpaceError.at(target, filename, message, hint=hint)
    return SpaceError(err.message, filename, lineno, hint=err.hint)


_OPERATORS = {"<<": ast.LShift, ">>": ast.RShift, "^": ast.BitXor, "@": ast.MatMult, "&": ast.BitAnd,
              "|": ast.BitOr, "~": ast.Invert}


def _locate(err: BeastError, tree, filename, lineno):
    """Fill in the location of an error raised by beast's vocabulary while running user code."""
    if err.filename is not None or lineno is None:
        return err
    err.filename, err.lineno = filename, lineno
    focus = getattr(err, "focus", None)   # the source of the offending expression, when known
    calls = _nodes_on_line(tree, lineno, ast.Call)
    exact = [n for n in _nodes_on_line(tree, lineno, ast.expr)
             if focus and n.end_lineno == lineno and ast.unparse(n) == focus]
    operator = _OPERATORS.get(getattr(err, "operator", None))     # an operator beast refuses here
    if operator is not None and not exact:
        exact = [n for n in _nodes_on_line(tree, lineno, (ast.BinOp, ast.UnaryOp))
                 if isinstance(n.op, operator)]
    call = getattr(err, "call", None)                               # or a conversion
    if call is not None:
        exact = [n for n in calls if _callee(n) == call]
    if exact:
        err.col, err.end_col = exact[0].col_offset, exact[0].end_col_offset
    elif calls:
        err.col, err.end_col = calls[0].col_offset, (calls[0].end_col_offset
                                                     if calls[0].end_lineno == lineno else None)
    return err


def _name_error(exc, tree, filename, lineno, namespace):
    name = getattr(exc, "name", None)
    nodes = [n for n in _nodes_on_line(tree, lineno, ast.Name) if n.id == name]
    hint = None
    later = [n for n in ast.walk(tree) if isinstance(n, (ast.Name, ast.FunctionDef))
             and getattr(n, "id", getattr(n, "name", None)) == name and
             (isinstance(n, ast.FunctionDef) or isinstance(n.ctx, ast.Store))]
    if later:
        hint = (f"'{name}' is defined later, at line {later[0].lineno}: expression iterators must be "
                "defined before use (or use an @iterator function, which may come in any order)")
    elif name in VOCABULARY:
        hint = f"'{name}' is beast's: {IMPORT_HINT}"
    else:
        import difflib
        close = difflib.get_close_matches(name or "", [k for k in namespace if not k.startswith("_")], 1)
        if close:
            hint = f"did you mean '{close[0]}'?"
    message = f"undefined name '{name}'"
    if nodes:
        return SpaceError.at(nodes[0], filename, message, hint=hint)
    return SpaceError(message, filename, lineno, hint=hint)


def _attribute_error(exc: AttributeError, tree, filename, lineno):
    """Reading an attribute that is not there (``dev.multiprocessor_count``): the caret under the
    attribute, and the closest name the object has (a device's: its fields, see
    ``beast devices --fields``). None when the line reads no attribute of that name."""
    name, obj = getattr(exc, "name", None), getattr(exc, "obj", None)
    nodes = [n for n in _nodes_on_line(tree, lineno, ast.Attribute) if n.attr == name]
    if not nodes or name is None:
        return None
    if type(obj).__name__ == "DeviceProfile":
        from ..lang.devices import unknown_attribute
        message, hint = unknown_attribute(name)
    else:
        import difflib
        message = f"{type(exc).__name__}: {exc}"
        close = difflib.get_close_matches(name, [k for k in dir(obj) if not k.startswith("_")], 1)
        hint = f"did you mean '{close[0]}'?" if close else None
    return SpaceError.at(nodes[0], filename, message, hint=hint)


# Python's messages that name no call, and the call that raises them
_SILENT_CALLS = {"too large to convert to C ssize_t": (
    "len", "len() stops at 2**63 - 1 (sys.maxsize); a range with a positive step has "
           "max(0, (stop - start + step - 1) // step) values")}


def _called(err: SpaceError, tree) -> SpaceError:
    """Put the caret of an error Python raised at module level under the call its message names
    ("iterator() takes 1 positional argument ..."), when the line has one such call."""
    if err.lineno is None:
        return err
    name = None
    for text, (call, hint) in _SILENT_CALLS.items():
        if text in err.message:
            name, err.hint = call, err.hint or hint
    calls = [n for n in _nodes_on_line(tree, err.lineno, ast.Call) if n.end_lineno == err.lineno and
             (_callee(n) == name if name else f"{_callee(n)}()" in err.message)]
    if len(calls) == 1 and err.col is None:
        err.col, err.end_col = calls[0].col_offset, calls[0].end_col_offset
    return err


def _undeclared_at(err: SettingError, tree, settings, close) -> SettingError:
    """Point an undeclared ``-D`` setting at the declaration it was most likely meant for (the
    close match), else at the first setting the space declares, else at its beast import."""
    decl = settings[close[0]] if close else next(iter(settings.values()), None)
    if decl is not None and decl.filename == err.filename:
        err.lineno = decl.lineno
        calls = [n for n in _nodes_on_line(tree, decl.lineno, ast.Call) if _callee(n) == "setting"]
        if calls:
            err.col, err.end_col = calls[0].col_offset, calls[0].end_col_offset
        return err
    for node in tree.body:
        if isinstance(node, (ast.Import, ast.ImportFrom)) and _imports_beast(ast.Module([node], [])):
            err.lineno, err.col, err.end_col = node.lineno, node.col_offset, node.end_col_offset
            break
    return err


def _imports_beast(tree) -> bool:
    """Whether the file imports anything from beast (else range() and min() are Python's own)."""
    return any(isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "beast" or
               isinstance(n, ast.Import) and any(a.name.split(".")[0] == "beast" for a in n.names)
               for n in ast.walk(tree))


def _without_beast(loaded: LoadedModule, ctx):
    """The error for a file that declares nothing because it does not import beast: its range()
    made Python ranges, which are constants (None: the file declares something, or imports beast)."""
    ns = loaded.namespace
    if ctx.conditions or ctx.settings or any(isinstance(v, (Expr, Condition)) for v in ns.values()):
        return None
    ranges = [k for k, v in ns.items() if isinstance(v, range) and not k.startswith("_")]
    if not ranges or _imports_beast(loaded.tree):
        return None
    where = [n for n in loaded.tree.body if isinstance(n, ast.Assign)
             and any(isinstance(t, ast.Name) and t.id == ranges[0] for t in n.targets)]
    message = f"'{ranges[0]}' is Python's range, not an iterator: the file does not import beast"
    if where:
        return SpaceError.at(where[0].value, loaded.filename, message, hint=IMPORT_HINT)
    return SpaceError(message, loaded.filename, None, hint=IMPORT_HINT)


def _int_list(value) -> bool:
    """A list of two or more Python integers (what ``bx = [16, 32, 64]`` binds)."""
    return type(value) is list and len(value) >= 2 and all(type(v) is int for v in value)


def _int_literal(node) -> bool:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
        node = node.operand
    return isinstance(node, ast.Constant) and type(node.value) is int


def _scalar_use(parent) -> bool:
    """Whether a read of a name whose parent node is ``parent`` stands where a number would: an arithmetic operand or
    a side of a comparison other than ``in``; an iterated, indexed, called-with or ``in`` list is not."""
    if isinstance(parent, (ast.BinOp, ast.UnaryOp)):
        return True
    if isinstance(parent, ast.Compare):
        return not any(isinstance(o, (ast.In, ast.NotIn)) for o in parent.ops)
    return False


def _warn_constant_lists(loaded: LoadedModule) -> None:
    """Warn at ``bx = [16, 32, 64]``: a module-level list of integer literals is a constant, and
    ``iterator([...])`` was probably meant. Only when the file reads the name nowhere, or only
    where a number would stand (``bx * by``): a list the file iterates, indexes, passes to a
    call or tests with ``in`` is a constant on purpose."""
    ns = loaded.namespace
    names = {k for k, v in ns.items() if not k.startswith("_") and _int_list(v)}
    if not names:
        return
    from ..errors import BeastWarning, warn
    tree = loaded.tree
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    for stmt in tree.body:
        if not (isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name)
                and stmt.targets[0].id in names and isinstance(stmt.value, ast.List)
                and len(stmt.value.elts) >= 2 and all(_int_literal(e) for e in stmt.value.elts)):
            continue
        name = stmt.targets[0].id
        reads = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name
                 and isinstance(n.ctx, ast.Load)]
        stores = [n for n in ast.walk(tree) if isinstance(n, ast.Name) and n.id == name
                  and isinstance(n.ctx, ast.Store)]
        if len(stores) > 1 or not all(_scalar_use(parents.get(n)) for n in reads):
            continue
        text = ast.get_source_segment(loaded.source, stmt.value) or ast.unparse(stmt.value)
        warn(BeastWarning.at(stmt.value, loaded.filename,
                             f"'{name}' is a list, so it is a constant, not an iterator",
                             hint=f"to tune over these values, write {name} = iterator({text})"))


def _check_choice_comparisons(loaded: LoadedModule, settings: dict) -> None:
    """Refuse ``precision == "doubel"`` where ``precision = setting("precision", ..., choices=...)``:
    a string that is none of the setting's choices makes the comparison false for every value."""
    chosen = {n: d for n, d in settings.items() if d.choices and all(isinstance(c, str) for c in d.choices)}
    if not chosen:
        return
    tree = loaded.tree
    bound = {}                  # module-level name -> SettingDecl it holds
    for stmt in tree.body:
        if isinstance(stmt, ast.Assign) and isinstance(stmt.value, ast.Call) and _callee(stmt.value) == "setting" \
                and stmt.value.args and isinstance(stmt.value.args[0], ast.Constant) \
                and stmt.value.args[0].value in chosen:
            for target in stmt.targets:
                if isinstance(target, ast.Name):
                    bound[target.id] = chosen[stmt.value.args[0].value]
    if not bound:
        return
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        for op, a, b in zip(node.ops, sides, sides[1:]):
            if not isinstance(op, (ast.Eq, ast.NotEq)):
                continue
            for name, const in ((a, b), (b, a)):
                decl = bound.get(getattr(name, "id", None))
                if decl is not None and isinstance(const, ast.Constant) and isinstance(const.value, str) \
                        and const.value not in decl.choices:
                    import difflib
                    shown = ", ".join(repr(c) for c in decl.choices)
                    close = difflib.get_close_matches(const.value, list(decl.choices), 1)
                    hint = (f"did you mean {close[0]!r}? " if close else "") + \
                        f"setting '{decl.name}' (line {decl.lineno}) has the choices {shown}"
                    raise SpaceError.at(const, loaded.filename,
                                        f"{const.value!r} is not one of the choices of setting '{decl.name}': "
                                        f"the comparison is {'false' if isinstance(op, ast.Eq) else 'true'} "
                                        "for every value", hint=hint)


def _syntax_error(exc: SyntaxError, source: str, filename) -> SpaceError:
    """The report of a syntax error. Python counts its columns in the line as it reads it again from
    the file, as UTF-8 text: compiled again under a name that is no file, they count in ``source``
    (the caret is right in a latin-1 file too)."""
    try:
        compile(source, "<beast space>", "exec", dont_inherit=True)
    except SyntaxError as again:
        exc = again
    col = (exc.offset - 1) if exc.offset else None
    end = (exc.end_offset - 1) if getattr(exc, "end_offset", None) and exc.end_lineno == exc.lineno else None
    if end is not None and col is not None and end <= col:
        end = None
    lines = source.splitlines()
    if exc.lineno and exc.lineno <= len(lines):     # characters -> UTF-8 bytes, as ast counts them
        line = lines[exc.lineno - 1]
        col, end = (None if c is None else len(line[:c].encode("utf-8", "surrogatepass")) for c in (col, end))
    return SpaceError(f"syntax error: {exc.msg}", filename, exc.lineno, col, end)


ENCODING_HINT = "a space file is UTF-8 text unless a comment on its first or second line names " \
                "another encoding, as in Python: # -*- coding: latin-1 -*-"


def _decode(data: bytes, filename: str) -> str:
    """The text of a space file as Python reads it (PEP 263): UTF-8, a byte order mark dropped, or
    the encoding its coding line names; lines end in \\n. A SpaceError where Python would not read it."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if not exc.msg.startswith("invalid or missing"):   # an unknown codec, or a BOM and another codec
            lines = data.splitlines()[:2]
            lineno = next((i for i, line in enumerate(lines, 1) if b"coding" in line), 1)
            message = exc.msg if not data.startswith(codecs.BOM_UTF8) else \
                "the file starts with a UTF-8 byte order mark, but its coding line names another encoding"
            raise SpaceError(f"cannot read space file: {message}", filename, lineno, hint=ENCODING_HINT,
                             source_line=lines[lineno - 1].decode("utf-8-sig", "replace")) from None
        encoding = "utf-8"          # a first or second line that is not UTF-8: said below, with where
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        start = data.rfind(b"\n", 0, exc.start) + 1        # of the line with the byte that is not text
        col = len(data[start:exc.start].decode(encoding).encode("utf-8"))     # UTF-8 bytes, as ast counts
        name = "UTF-8" if encoding.startswith("utf-8") else encoding
        raise SpaceError(f"cannot read space file: byte {data[exc.start]:#04x} is not {name} text",
                         filename, data.count(b"\n", 0, exc.start) + 1, col, col + 3, hint=ENCODING_HINT,
                         source_line=data[start:].splitlines()[0].decode(encoding, "replace")) from None
    return io.IncrementalNewlineDecoder(None, translate=True).decode(text, final=True)


def load_module(path, device=None, settings=None) -> LoadedModule:
    """Read, parse and execute the space file at ``path`` with beast's overloaded vocabulary."""
    filename = os.path.abspath(os.fspath(path))
    try:
        with open(filename, "rb") as fh:
            data = fh.read()
    except OSError as exc:
        raise SpaceError(f"cannot read space file {path}: {exc.strerror}") from None
    source = _decode(data, filename)
    try:
        # compiled from the text: the AST (LoadedModule.tree) is parsed only when it is needed
        code = compile(source, filename, "exec", dont_inherit=True)
    except SyntaxError as exc:
        raise _syntax_error(exc, source, filename) from None
    except ValueError as exc:           # Python 3.10: "source code string cannot contain null bytes"
        raise SpaceError(f"cannot read space file: {exc}", filename) from None
    modname = "_beast_space_" + os.path.splitext(os.path.basename(filename))[0]
    module = types.ModuleType(modname)
    module.__file__ = filename
    namespace = module.__dict__
    loaded = LoadedModule(filename, source, namespace, {}, [])
    with compiling(device, settings) as ctx:
        if device is not None:
            ctx.device()   # a bad --device is reported before the file runs
        sys.modules[modname] = module
        folder = os.path.dirname(filename)      # `import helper` beside the file, as `python FILE` finds it
        added = folder not in sys.path
        if added:
            sys.path.insert(0, folder)
        try:
            exec(code, namespace)
        except IteratorTruthError as exc:
            line = _user_frame_line(exc.__traceback__, filename)
            raise _truth_error(exc, loaded.tree, filename, line) from None
        except BeastError as exc:
            line = _user_frame_line(exc.__traceback__, filename)
            raise _locate(exc, loaded.tree, filename, line) from None
        except NameError as exc:
            line = _user_frame_line(exc.__traceback__, filename)
            raise _name_error(exc, loaded.tree, filename, line, namespace) from None
        except Exception as exc:  # noqa: BLE001 - any failure of user code is reported at its line
            lineno, col, end = _user_frame_position(exc.__traceback__, filename)
            if isinstance(exc, AttributeError):
                error = _attribute_error(exc, loaded.tree, filename, lineno)
                if error is not None:
                    raise error from None
            hint = None if _imports_beast(loaded.tree) else \
                f"the file does not import beast, so range() and min() are Python's own: {IMPORT_HINT}"
            raise _called(SpaceError(f"{type(exc).__name__}: {exc}", filename, lineno, col, end, hint=hint),
                          loaded.tree) from None
        finally:
            sys.modules.pop(modname, None)
            if added and folder in sys.path:
                sys.path.remove(folder)
        error = _without_beast(loaded, ctx)
        if error is not None:
            raise error
        _warn_constant_lists(loaded)
        _check_choice_comparisons(loaded, ctx.settings)
        undeclared = [k for k in ctx.overrides if k not in ctx.settings]
        if undeclared:
            import difflib
            name = undeclared[0]
            close = difflib.get_close_matches(name, list(ctx.settings), 1)
            known = ", ".join(ctx.settings) or "none"
            hint = f"did you mean '{close[0]}'?" if close else \
                f"settings declared by the space: {known}; a space declares one with " \
                f"{name} = setting('{name}', default)"
            error = SettingError(f"setting '{name}' is not declared by {os.path.basename(filename)}",
                                 filename, None, hint=hint)
            raise _undeclared_at(error, loaded.tree, ctx.settings, close)
    loaded.settings, loaded.conditions = dict(ctx.settings), list(ctx.conditions)
    loaded.lines, loaded._context = source.splitlines(), ctx
    return loaded
