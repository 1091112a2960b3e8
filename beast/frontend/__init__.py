"""The front end: space file -> nodes -> dependency DAG -> level sets -> hoisting plan."""
from .loader import load_module
from .nodes import build_space_model
from .plan import make_plan

__all__ = ["load_module", "build_space_model", "make_plan"]
