"""What tests/arch/check-architecture.py reads: the C sources (a light scan
of their definitions, calls and includes, comments and strings stripped)
and docs/ARCHITECTURE.md's tables (layout, layers, calls, MPI, clock
rooms, each module's files)."""
import os
import re

MAX_FILE_LINES = 600
MAX_FUNC_LINES = 80
DOC = "docs/ARCHITECTURE.md"
KEYWORDS = {"if", "for", "while", "switch", "return", "sizeof", "do",
            "else", "case", "defined", "_Alignof", "_Generic",
            "_Static_assert", "offsetof", "va_arg"}
MPI_CALL = re.compile(r"\bMPI_[A-Z][a-z][A-Za-z0-9_]*\s*\(")
# a definition on one line, "static int f(int x) { return x; }"
ONE_LINE_FUNC = re.compile(r"^(?!typedef|struct|enum|union)(static\b|inline\b)?"
                           r"[A-Za-z_][^=;{()]*?\b([A-Za-z_]\w*)\s*"
                           r"\([^;{]*\)\s*\{.*\}\s*$")
NOW_PS_WRITE = re.compile(r"\bnow_ps\s*(?:[-+*/]?=(?!=)|\+\+|--)")


class DocError(Exception):
    pass


def rel(root, path):
    return os.path.relpath(path, root)


# ---------------------------------------------------------------- C scan --

def strip_c(text):
    """The text with comments, string and character literals blanked
    (newlines kept, so line numbers hold)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


class CFile:
    """One C file: its lines (raw and stripped), its function definitions
    (name, static, first and last line, 1-based) and its calls."""

    def __init__(self, path):
        self.path = path
        with open(path, encoding="utf-8", errors="replace") as f:
            self.raw = f.read().split("\n")
        self.code = strip_c("\n".join(self.raw)).split("\n")
        self.funcs = []
        self._find_functions()

    def _find_functions(self):
        lines, i = self.code, 0
        while i < len(lines):
            one = ONE_LINE_FUNC.match(lines[i])
            if one:  # int f(void) { return 1; }
                self.funcs.append({"name": one.group(2),
                                   "static": one.group(1) is not None,
                                   "open": i + 1, "close": i + 1})
            if not lines[i].startswith("{"):
                i += 1
                continue
            start = i - 1  # the signature: back to its column-0 line
            while start >= 0 and lines[start][:1] in (" ", "\t"):
                start -= 1
            sig = " ".join(lines[max(start, 0):i])
            end = i + 1
            while end < len(lines) and not lines[end].startswith("}"):
                end += 1
            m = re.search(r"([A-Za-z_]\w*)\s*\(", sig)
            if start >= 0 and m and not sig.lstrip().startswith(
                    ("#", "typedef", "struct", "enum", "union")) \
                    and "=" not in sig.split("(")[0]:
                self.funcs.append({"name": m.group(1),
                                   "static": re.match(r"\s*(static|inline)\b",
                                                      sig) is not None,
                                   "open": i + 1, "close": end + 1})
            i = end + 1

    def calls(self):
        """(name, line) of every identifier followed by '(' inside a
        function body."""
        for f in self.funcs:
            for ln in range(f["open"], f["close"] - 1):
                for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\(",
                                     self.code[ln]):
                    if m.group(1) not in KEYWORDS:
                        yield m.group(1), ln + 1

    def includes(self):
        for i, line in enumerate(self.raw):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if m:
                yield m.group(1), i + 1


# --------------------------------------------------------- the document --

def tables(doc_lines):
    """Every Markdown table: (line of its header, header cells, rows), each
    row (line, cells)."""
    out, i = [], 0
    while i < len(doc_lines):
        if doc_lines[i].startswith("|") and i + 1 < len(doc_lines) and \
                re.match(r"\|\s*-", doc_lines[i + 1]):
            head = cells(doc_lines[i])
            rows, j = [], i + 2
            while j < len(doc_lines) and doc_lines[j].startswith("|"):
                rows.append((j + 1, cells(doc_lines[j])))
                j += 1
            out.append((i + 1, head, rows))
            i = j
        else:
            i += 1
    return out


def cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def find_table(tabs, first, second):
    for t in tabs:
        if len(t[1]) >= 2 and t[1][0] == first and \
                t[1][1].startswith(second):
            return t
    raise DocError(f"no table whose header reads '| {first} | {second}"
                   " ...'")


def ticked(text):
    return re.findall(r"`([^`]+)`", text)


def drop_parens(text):
    while True:
        t = re.sub(r"\([^()]*\)", "", text)
        if t == text:
            return t
        text = t


class Doc:
    def __init__(self, root):
        path = os.path.join(root, DOC)
        with open(path, encoding="utf-8") as f:
            self.lines = f.read().split("\n")
        tabs = tables(self.lines)
        self._layout(find_table(tabs, "module", "public headers"))
        self._layers()
        self._calls(find_table(tabs, "module", "calls"))
        self._mpi(find_table(tabs, "module", "files that call MPI"))
        self._clock(find_table(tabs, "room", "advances a clock"))
        self._file_tables(tabs)

    def _file_tables(self, tabs):
        """A module's "| file | room |" table (under its "### module:"
        heading) names every file of the module: module -> (line,
        {file: line})."""
        self.file_tables = {}
        for line, head, rows in tabs:
            if head[:2] != ["file", "room"]:
                continue
            mod = next((m.group(1) for m in (
                re.match(r"### (\w+):", h) for h in reversed(
                    self.lines[:line - 1])) if m), None)
            if mod is None:
                raise DocError(f"line {line}: a file/room table outside a "
                               "module's section")
            names = {}
            for row_line, row in rows:
                for f in ticked(row[0]):
                    names[f] = row_line
            self.file_tables[mod] = (line, names)

    def _layout(self, table):
        self.header_owner, self.modules = {}, []
        for _, row in table[2]:
            mod = row[0].strip("`")
            self.modules.append(mod)
            if row[1].lstrip("(").startswith("private"):
                continue
            for h in ticked(row[1]):
                self.header_owner[os.path.basename(h)] = mod
        if not self.modules:
            raise DocError("the layout table lists no module")

    def _layers(self):
        self.layer = {}
        for line in self.lines:
            m = re.match(r"layer (\d+)\s+(.*)", line)
            if not m:
                continue
            for tok in m.group(2).split():
                tok = tok.rstrip("/")
                if tok not in self.modules and tok != "bench":
                    break
                self.layer[tok] = int(m.group(1))
        missing = [m for m in self.modules + ["bench"] if m not in self.layer]
        if missing:
            raise DocError("the layer diagram places no "
                           + ", ".join(missing))

    def _calls(self, table):
        self.calls_line, self.calls = table[0], {}
        for line, row in table[2]:
            mod = row[0].strip("`")
            names = [n.strip() for n in drop_parens(row[1]).split(",")]
            self.calls[mod] = (line, set() if names == ["none"]
                               else {n for n in names if n})
        missing = [m for m in self.modules + ["bench"] if m not in self.calls]
        if missing:
            raise DocError("the calls table has no row for "
                           + ", ".join(missing))

    def _mpi(self, table):
        self.mpi = {}
        for line, row in table[2]:
            self.mpi[row[0].strip("`")] = (line, set(ticked(row[1])))

    def _clock(self, table):
        self.rooms = {}
        for line, row in table[2]:
            for f in ticked(row[0]):
                self.rooms[f] = line
        self.writers = set()
        for i, line in enumerate(self.lines):
            if line.startswith("Clock writers:"):
                text = " ".join(self.lines[i:i + 6]).split(".")[0]
                self.writers = set(ticked(text)) - {"now_ps"}
        if not self.writers:
            raise DocError("no 'Clock writers:' paragraph naming the "
                           "functions that advance a clock")
