"""The tuning loop: one :mod:`.session` (header, log and resume, reference, candidates, the speed
model's gate, twins, early cuts, progress) behind two fronts that only measure -- :func:`tune` on
this machine (:mod:`.local`) and over a Ray cluster (:mod:`.ray`: workers in :mod:`.ray_workers`,
the pipeline in :mod:`.ray_pipeline`) --, the candidate streams of the enumeration
(:mod:`.candidates`), the resumable log (:mod:`.log`) and the report's text (:mod:`.report`)."""
