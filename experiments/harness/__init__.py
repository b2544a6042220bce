"""The match harness: tasks and players (:mod:`.match`), the pooled runner (:mod:`.runner`), process
and Ray backends (:mod:`.backends`), the results store and PGN export, openings, tournaments,
Elo-versus-nodes scales, ablations, ratings and SPRT, and the four-seat bughouse server."""
