"""Looking at a space without enumerating it all: pruning statistics (:mod:`.stats`), the
unpruned product (:mod:`.cartesian`), uniform sampling (:mod:`.sampling`)."""
