"""The papers' evaluations as functions returning typed rows (notebooks draw them), one module or
small package per paper: :mod:`.carin`, :mod:`.oodin_eval` (OODIn's Figs 3-6), :mod:`.delen`,
:mod:`.masa`, :mod:`.flexnn`. What two papers share has a module of its own: :mod:`.runtime`
(runtime adaptation, CARIn's and OODIn's Figs 7-8) and :mod:`.memory` (the networks of MASA's and
FlexNN's evaluations). Nothing here imports the explorer, the plots or the reports."""
