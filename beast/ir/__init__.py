"""The intermediate representation between the front end and the printers.

- :mod:`beast.ir.nest`: the loop-nest IR (``Loop``, ``Let``, ``Check``, ``Emit``, ``Program``), data only;
- :mod:`beast.ir.build`: the program built from the front end's plan;
- :mod:`beast.ir.tighten`: tighter loops where provably safe (solved loops, divisor loops, breaks);
- :mod:`beast.ir.counting`: pure counting nests (a product of lengths instead of a loop);
- :mod:`beast.ir.loops`: each loop's sequence lowered into a loop form for a target (ranges,
  constants, binds, solved and divisor loops, scratch tables, fused chains, counting nests);
- :mod:`beast.ir.targets`: what each backend's integers hold (C 64-bit, LuaJIT 53-bit), how its
  loop nest runs (its :class:`~beast.ir.loops.LoopTarget`) and what it does with user functions;
- :mod:`beast.ir.nestplan`: the nest prepared for one target before printing (its expressions
  lowered, lets stored, checks decided, functions it calls decided, refusals raised);
- :mod:`beast.ir.split`: where a deep loop nest moves into a function of its own (a target's Budget);
- :mod:`beast.ir.body`, :mod:`beast.ir.lower`: function bodies lowered once for every target;
- :mod:`beast.ir.tabulate`: tables of the functions a target cannot translate;
- :mod:`beast.ir.literals`, :mod:`beast.ir.sites`: integer widths; where an error can happen;
- :mod:`beast.ir.instrument`: the program ``beast stats`` runs (counters of tried values and rejections).
- :mod:`beast.ir.prefix`: programs over the outer loops, for sampling (the prefixes of a depth,
  and the nest with its outer loops bound to a given prefix).

Data flows one way: front end -> ir -> codegen (printers) -> runtime.
"""
from .build import build_program
from .counting import pure_nest, safe_seq
from .nest import Check, Emit, Let, Loop, Program, Tally, walk_statements

__all__ = ["build_program", "pure_nest", "safe_seq", "Check", "Emit", "Let", "Loop", "Program", "Tally",
           "walk_statements"]
