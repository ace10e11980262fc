"""Reading what a user brings to ``workbench models add``: the model file (a ``.keras`` file, a
SavedModel folder or a ``.tflite`` file) and the task data (``DATA.npz``), each checked so that a
mistake ends in one line naming the file and what is wrong.

What is read is checked before anything is spent on it: a file must be a regular file (a FIFO
would block the read, a device never end); a SavedModel folder holds only regular files and
folders, none a symlink or outside it (its files are copied into the registry, and a link would
copy whatever it points at); and archives are bounded by what they expand to (a ``.keras`` zip by
its members' uncompressed sizes and its compression ratio, a ``.npz`` by its arrays' headers,
shape x itemsize) before Keras or NumPy unpacks them. The path the user named is followed if it is
a symlink: that is their choice; links inside a SavedModel are not. Paths in messages go through
:func:`workbench.names.printable`, so a file name never puts escape codes on a terminal.

The package's modules: :mod:`.files` (safe reading and copying), :mod:`.formats` (which
format, and reading each), :mod:`.keras_models`, :mod:`.signature` (inputs, outputs, feeds) and
:mod:`.data` (the task data)."""

from .data import check_data as check_data
from .data import load_npz as load_npz
from .files import MAX_EXPANDED_BYTES as MAX_EXPANDED_BYTES
from .files import MAX_MEMBERS as MAX_MEMBERS
from .files import MAX_RATIO as MAX_RATIO
from .files import RATIO_FLOOR as RATIO_FLOOR
from .files import check_archive as check_archive
from .files import check_tree as check_tree
from .files import copy_file as copy_file
from .files import copy_tree as copy_tree
from .files import first_line as first_line
from .files import regular_file as regular_file
from .files import shown as shown
from .formats import Kind as Kind
from .formats import check_model_file as check_model_file
from .formats import inspect_model as inspect_model
from .formats import kind_of as kind_of
from .formats import litert_reason as litert_reason
from .keras_models import custom_objects as custom_objects
from .keras_models import load_keras as load_keras
from .signature import Output as Output
from .signature import check_feeds as check_feeds
from .signature import choose_output as choose_output
from .signature import feed_note as feed_note
from .signature import parse_feeds as parse_feeds
from .signature import parse_shape as parse_shape
