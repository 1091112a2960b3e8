"""Fig. 6 of Luszczek et al. 2016: the closure lexical scope -- the Fibonacci numbers up to and
including MAX (1, 2, 3, 5, 8, ...: the figure yields 1 once).

    beast enumerate spaces/fig06_fibonacci.py -o fib.csv -D MAX=1000
"""
from beast import *

MAX = setting("MAX", 100)


@iterator
def fibonacci():
    k = n = 1
    while n <= MAX:
        yield n
        n, k = n+k, n
