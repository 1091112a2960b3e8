"""The GPU end: CuPy compile, launch, check and timing (:mod:`.gpu`), measurement records and the
repeat-until-stable rule (:mod:`.measure`), measurements in a worker process (:mod:`.isolate`),
and the early cut replayed on a log (:mod:`.cut_replay`)."""
