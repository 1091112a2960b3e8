"""Readable views of the plan: level sets, loop order and where each node is evaluated."""
from __future__ import annotations

import json

from .plan import Plan


def dag_dict(plan: Plan) -> dict:
    model = plan.model
    nodes = []
    for node in model.nodes.values():
        entry = {"name": node.name, "role": node.role, "level": plan.levels[node.name],
                 "depth": plan.depth[node.name], "deps": list(node.deps), "line": node.lineno}
        if node.role == "condition":
            entry["kind"] = node.kind
        if node.role == "derived":
            entry["type"] = node.type
            entry["used"] = node.name not in plan.unused
        nodes.append(entry)
    return {"iterators": model.iterators, "loop_order": plan.loop_order,
            "level_sets": plan.level_sets, "nodes": nodes,
            "steps": [[f"{k} {n}" for k, n in step] for step in plan.steps]}


def dag_text(plan: Plan) -> str:
    model = plan.model
    out = ["level sets:"]
    for i, names in enumerate(plan.level_sets):
        labels = [f"{n} ({model.nodes[n].role[0]})" for n in names]
        out.append(f"  L{i}: " + ", ".join(labels))
    out.append("")
    out.append("loop nest (i = iterator, let = derived variable, check = condition; True rejects):")
    for kind, name in plan.steps[0]:
        out.append(f"  {kind} {name}")
    for d, it in enumerate(plan.loop_order, start=1):
        node = model.nodes[it]
        pad = "  " * d
        deps = f"  <- {', '.join(node.deps)}" if node.deps else ""
        out.append(f"{pad}for {it}{deps}")
        for kind, name in plan.steps[d]:
            n = model.nodes[name]
            extra = f" [{n.kind}]" if kind == "check" and n.kind else ""
            out.append(f"{pad}  {kind} {name}{extra}")
    if plan.unused:
        out.append("")
        out.append("derived variables no condition or iterator reads (not computed): " +
                   ", ".join(plan.unused))
    return "\n".join(out)


def dag_dot(plan: Plan) -> str:
    model = plan.model
    shapes = {"iterator": "ellipse", "derived": "box", "condition": "octagon"}
    colors = {"iterator": "lightblue", "derived": "lightgray", "condition": "salmon"}
    out = ["digraph beast {", "  rankdir=TB;"]
    for i, names in enumerate(plan.level_sets):
        out.append("  { rank=same; " + " ".join(json.dumps(n) for n in names) + " }")
    for node in model.nodes.values():
        out.append(f"  {json.dumps(node.name)} [shape={shapes[node.role]}, style=filled, "
                   f"fillcolor={colors[node.role]}, label={json.dumps(node.name + f' (L{plan.levels[node.name]})')}];")
    for node in model.nodes.values():
        for dep in node.deps:
            out.append(f"  {json.dumps(dep)} -> {json.dumps(node.name)};")
    out.append("}")
    return "\n".join(out)


def render_dag(plan: Plan, fmt: str = "text") -> str:
    """The DAG and hoisting plan as 'text', 'dot' (Graphviz) or 'json'."""
    if fmt == "json":
        return json.dumps(dag_dict(plan), indent=2)
    if fmt == "dot":
        return dag_dot(plan)
    return dag_text(plan)
