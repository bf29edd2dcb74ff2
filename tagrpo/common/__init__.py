"""The lowest layer: input errors, named-mode checks, dataclass flag fields, the command-line parser family,
upstream contract checks and the registries that higher layers fill (plug-ins). Every other part of the package
may import it; it imports no other part."""
