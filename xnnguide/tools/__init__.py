"""Command-line tools of the repository, not part of the site build: the AOT compiler
(``python -m xnnguide.tools.aot_compiler``), the build benchmark (``make bench``) and the
comparison with ExecuTorch's example compiler (``make bench-aot``)."""
