"""A kernel's speed without a GPU: ptxas facts (:mod:`.compiler_facts`), the counters the model
reads (:mod:`.features`), the speed model and its gate (:mod:`.speed`), and ``beast tune --explain``
(:mod:`.explain`)."""
