"""The bottom layer: what the build, the checker, the tools and the recipes all read. No Sphinx, and no import
of the packages above it; each module says its job in its docstring's first line.
"""
