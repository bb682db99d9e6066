"""The command-line front ends: `newt`'s arguments, print mode, memory and import commands."""
