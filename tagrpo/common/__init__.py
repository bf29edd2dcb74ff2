"""The lowest layer: input errors, named-mode checks, dataclass flag fields, the command-line parser family and
upstream contract checks. Every other part of the package may import it; it imports no other part."""
