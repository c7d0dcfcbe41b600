"""What a run folder holds and how it is read back: the result row (`results`), the folder's
layout and lock, the recorded plan, the breakdown and bandwidth files, and the figures derived from
rows (scaling, utilisation, how close a row is to the device's peak)."""
