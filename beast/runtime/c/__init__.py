"""The C backend: the system's C compiler (:mod:`.toolchain`), the runtime and each space's
shared object built, cached by content hash, checked and loaded (:mod:`.build`), the cffi
enumerator on worker threads (:mod:`.enumerator`), and builds in a background process
(:mod:`.background`)."""
