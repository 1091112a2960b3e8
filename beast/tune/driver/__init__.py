"""The tuning loop: :func:`tune` on local GPUs (:mod:`.local`) and over a Ray cluster (:mod:`.ray`),
the resumable log (:mod:`.log`) and the report's text (:mod:`.report`)."""
