"""Fig. 3 of Luszczek et al. 2016: a closure iterator (a generator with state) that yields the
prime numbers up to MAX (and 1, as in the paper).

The figure's inner loop is a ``for``/``else`` whose ``else`` lost its indentation in print; as
printed it never yields past 2. Here the test is written with a flag, which every backend
translates (``else`` on a loop is not part of the language).

    beast enumerate spaces/fig03_primes.py -o primes.csv -D MAX=50
"""
from beast import *

MAX = setting("MAX", 30, help="the largest candidate (at least 3)")


@iterator
def primes():
    yield 1
    yield 2
    n = 3
    old_primes = list()
    while n <= MAX:
        is_prime = True
        for i in old_primes:
            if n % i == 0:
                is_prime = False
                break
        if is_prime:
            yield n
            old_primes.append(n)
        n += 2
