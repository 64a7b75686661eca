"""CodePrinter: the one place that knows how generated Swift is indented."""

from contextlib import contextmanager


class CodePrinter:
    """Collects lines of Swift, each indented to the current level (4 spaces a level).

        p = CodePrinter()
        with p.block("public struct Leaf {"):
            p.line('public var name = ""')
        p.text()  # 'public struct Leaf {\\n    public var name = ""\\n}\\n'

    Generators write only the text of a line; nesting comes from `indent()` and `block()`.
    """

    INDENT = "    "

    def __init__(self):
        self._lines = []
        self._level = 0

    def line(self, text=""):
        """One line at the current indentation; an empty line stays empty (no trailing spaces)."""
        self._lines.append(self.INDENT * self._level + text if text else "")

    @contextmanager
    def indent(self):
        """Lines printed inside the `with` are one level deeper."""
        self._level += 1
        try:
            yield
        finally:
            self._level -= 1

    @contextmanager
    def block(self, opener, closer="}"):
        """`opener`, the lines printed inside the `with` one level deeper, then `closer`."""
        self.line(opener)
        with self.indent():
            yield
        self.line(closer)

    @contextmanager
    def switch(self, opener):
        """A Swift `switch`: `opener`, the `case` lines printed inside the `with` at the same
        level (as Swift writes them; a case's statements go in `indent()`), then `}`."""
        self.line(opener)
        yield
        self.line("}")

    def doc(self, comments, default=None):
        """A schema comment as `///` lines, or the line `default` when the schema has none.

        Returns whether the schema had a comment.
        """
        text = (comments or "").strip("\n")
        if not text.strip():
            if default is not None:
                self.line(default)
            return False
        for line in text.split("\n"):
            self.line("/// " + line.strip() if line.strip() else "///")
        return True

    def text(self):
        """The printed file: the lines, ending in exactly one newline."""
        return "\n".join(self._lines).rstrip("\n") + "\n"
