"""Fig. 2 of Luszczek et al. 2016: deferred iterators and their expression-based counterparts.

``inner`` is defined before ``outer``, the iterator it reads: a deferred iterator (an ``@iterator``
function) may be defined in any order, and ``outer`` still becomes the outer loop. The expression
iterators ``ex_outer`` and ``ex_inner`` must come in this order (the other order is an undefined
name). ``inner`` reads ``outer`` as a free name: that makes it a dependency too.

The paper's ``ex_outer = range(100)`` is ``range(EX)`` here, 10 by default, so that the product
with ``inner``/``outer`` stays small (Fermi: 496 x 45 configurations).

    beast count spaces/fig02_deferred.py -D architecture=fermi
    beast dag spaces/fig02_deferred.py
"""
from beast import *

Fermi, Kepler, Maxwell = "fermi", "kepler", "maxwell"
architecture = setting("architecture", Kepler, choices=[Fermi, Kepler, Maxwell])
EX = setting("EX", 10)


@iterator
def inner():
    return range(outer)


@iterator
def outer():
    if architecture == Fermi: return range(32)
    elif architecture == Kepler: return range(192)
    elif architecture == Maxwell: return range(256)


ex_outer = range(EX)
ex_inner = range(ex_outer)
