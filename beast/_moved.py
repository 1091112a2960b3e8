"""Old module paths of beast (before the package-per-layer layout) as aliases of the new ones.

``import beast.tune.runner`` or ``from beast.stats import Stats`` keep working for one release:
the old name is bound in ``sys.modules`` to the module that now holds the code, so both names
share one module object (a patch through either is seen by both). This table is read only when
an old name is asked for (the finder in beast/__init__.py is the last one Python asks).
"""
from __future__ import annotations

import importlib
import importlib.machinery
import sys

#: old dotted name -> new dotted name
MOVED = {
    "beast.spell": "beast.expr.spell",
    "beast.devices": "beast.lang.devices",
    "beast.stats": "beast.explore.stats",
    "beast.cartesian": "beast.explore.cartesian",
    "beast.sampling": "beast.explore.sampling",
    "beast.progress": "beast.ui.progress",
    "beast.plots": "beast.ui.plots",
    "beast.graphviz": "beast.ui.graphviz",
    "beast.output": "beast.ui.output",
    "beast.kernel_tuner_strategy": "beast.kernel_tuner.strategy",
    "beast.kernel_tuner_source": "beast.kernel_tuner.source",
    "beast.tune.strategies": "beast.search",
    "beast.tune.strategies.base": "beast.search.base",
    "beast.tune.strategies.local": "beast.search.local",
    "beast.tune.strategies.model": "beast.search.model",
    "beast.tune.strategies.portfolio": "beast.search.portfolio",
    "beast.tune.strategies.random_search": "beast.search.random_search",
    "beast.tune.replay": "beast.search.replay",
    "beast.runtime.c_backend": "beast.runtime.c.enumerator",
    "beast.runtime.c_background": "beast.runtime.c.background",
    "beast.runtime.python_backend": "beast.runtime.python",
    "beast.runtime.lua_backend": "beast.runtime.lua",
    "beast.tune.kernel": "beast.tune.kernels.paper",
    "beast.tune.kernel_mma": "beast.tune.kernels.mma",
    "beast.tune.gemm_layout": "beast.tune.kernels.layout",
    "beast.tune.families": "beast.tune.kernels.families",
    "beast.tune.gpu": "beast.tune.device.gpu",
    "beast.tune.measure": "beast.tune.device.measure",
    "beast.tune.isolate": "beast.tune.device.isolate",
    "beast.tune.cut_replay": "beast.tune.device.cut_replay",
    "beast.tune.hostsim": "beast.tune.sim.hostsim",
    "beast.tune.emulate": "beast.tune.sim.emulate",
    "beast.tune.counters": "beast.tune.sim.counters",
    "beast.tune.compiler_facts": "beast.tune.model.compiler_facts",
    "beast.tune.speed_model": "beast.tune.model.speed",
    "beast.tune.speed_features": "beast.tune.model.features",
    "beast.tune.explain": "beast.tune.model.explain",
    "beast.tune.runner": "beast.tune.driver.local",
    "beast.tune.ray_runner": "beast.tune.driver.ray",
    "beast.tune.reporting": "beast.tune.driver.report",
    "beast.tune.log": "beast.tune.driver.log",
}


class _Alias:
    """A meta path finder and loader (duck-typed: ``importlib.abc`` would import
    ``importlib.resources`` and with it tempfile at every start) that loads an old name as the
    module under its new name."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, self)

    def create_module(self, spec):
        module = importlib.import_module(MOVED[spec.name])
        sys.modules[spec.name] = module
        return module

    def exec_module(self, module):
        """The module ran under its new name already."""


_ALIAS = _Alias()


def find_spec(fullname):
    """The spec that loads old name ``fullname`` as its new module, or None."""
    return _ALIAS.find_spec(fullname)
