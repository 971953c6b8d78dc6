# `cmake --graphviz=build/graph/gather.dot -S . -B build` (docs/architecture.md, "The libraries"):
# Gather's own libraries and the binary, without system libraries, tests and benchmarks.
set(GRAPHVIZ_EXTERNAL_LIBS FALSE)
set(GRAPHVIZ_GENERATE_PER_TARGET FALSE)
set(GRAPHVIZ_GENERATE_DEPENDERS FALSE)
set(GRAPHVIZ_IGNORE_TARGETS "gather_tests;batch_bench;soak;latency_probe;gather_man;gather_fuzz_core;fuzz_.*")
