"""The C backend: toolchain discovery and the content-hash build cache (:mod:`.build`), the
cffi enumerator (:mod:`.enumerator`), and builds in a background process (:mod:`.background`)."""
