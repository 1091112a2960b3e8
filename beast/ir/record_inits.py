"""Templates of record ``__init__`` functions (:mod:`beast.ir.record`): ``TEMPLATES[n]`` sets ``n``
fields from ``n`` parameters. A record class gets a copy of one, its parameter and attribute names
replaced by its fields' (``code.replace``: no source is generated or compiled at run time), so
that building a record costs what a hand-written ``__init__`` costs (about a tenth of a generic
one that loops over the fields with ``object.__setattr__``).

Only the names ``self`` and ``f0`` ... ``f<n-1>`` may appear here, each field read once and stored
once, in order: :func:`beast.ir.record._fast_init` relies on it.
"""


def _init_1(self, f0):
    self.f0 = f0


def _init_2(self, f0, f1):
    self.f0 = f0
    self.f1 = f1


def _init_3(self, f0, f1, f2):
    self.f0 = f0
    self.f1 = f1
    self.f2 = f2


def _init_4(self, f0, f1, f2, f3):
    self.f0 = f0
    self.f1 = f1
    self.f2 = f2
    self.f3 = f3


def _init_5(self, f0, f1, f2, f3, f4):
    self.f0 = f0
    self.f1 = f1
    self.f2 = f2
    self.f3 = f3
    self.f4 = f4


def _init_6(self, f0, f1, f2, f3, f4, f5):
    self.f0 = f0
    self.f1 = f1
    self.f2 = f2
    self.f3 = f3
    self.f4 = f4
    self.f5 = f5


def _init_7(self, f0, f1, f2, f3, f4, f5, f6):
    self.f0 = f0
    self.f1 = f1
    self.f2 = f2
    self.f3 = f3
    self.f4 = f4
    self.f5 = f5
    self.f6 = f6


def _init_8(self, f0, f1, f2, f3, f4, f5, f6, f7):
    self.f0 = f0
    self.f1 = f1
    self.f2 = f2
    self.f3 = f3
    self.f4 = f4
    self.f5 = f5
    self.f6 = f6
    self.f7 = f7


def _init_9(self, f0, f1, f2, f3, f4, f5, f6, f7, f8):
    self.f0 = f0
    self.f1 = f1
    self.f2 = f2
    self.f3 = f3
    self.f4 = f4
    self.f5 = f5
    self.f6 = f6
    self.f7 = f7
    self.f8 = f8


def _init_10(self, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9):
    self.f0 = f0
    self.f1 = f1
    self.f2 = f2
    self.f3 = f3
    self.f4 = f4
    self.f5 = f5
    self.f6 = f6
    self.f7 = f7
    self.f8 = f8
    self.f9 = f9


def _init_11(self, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10):
    self.f0 = f0
    self.f1 = f1
    self.f2 = f2
    self.f3 = f3
    self.f4 = f4
    self.f5 = f5
    self.f6 = f6
    self.f7 = f7
    self.f8 = f8
    self.f9 = f9
    self.f10 = f10


def _init_12(self, f0, f1, f2, f3, f4, f5, f6, f7, f8, f9, f10, f11):
    self.f0 = f0
    self.f1 = f1
    self.f2 = f2
    self.f3 = f3
    self.f4 = f4
    self.f5 = f5
    self.f6 = f6
    self.f7 = f7
    self.f8 = f8
    self.f9 = f9
    self.f10 = f10
    self.f11 = f11


TEMPLATES = {fn.__code__.co_argcount - 1: fn for fn in (
    _init_1, _init_2, _init_3, _init_4, _init_5, _init_6, _init_7, _init_8, _init_9, _init_10, _init_11, _init_12)}
