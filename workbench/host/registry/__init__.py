"""Your own models in the workspace: ``workbench models add|list|show|remove`` and
``workbench quantise``.

Each model lives in ``<workspace>/models/<NAME>/``:

| file | what |
|---|---|
| ``model.json`` | the record (:class:`ModelRecord`): origin, input, output, task, metric, schemes |
| ``source.keras`` / ``source.savedmodel/`` / ``source.tflite`` | a copy of what was added |
| ``data.npz`` | a copy of the task data (``x``, ``y``, ``x_calib``), when given |
| ``<SCHEME>.tflite`` | the converted variants (FP32, FP16, DR8, FX8, FFX8) |
| ``fp32-outputs.npy`` | the FP32 outputs on the evaluation inputs (``agreement`` compares to them) |

Metrics (A in the profile) are :mod:`workbench.taskmetrics`'s: top-1 and top-5 accuracy, mIoU and
pixel accuracy, MAE and RMSE on labels ``y``, and agreement or cosine similarity with the FP32
variant's outputs (no labels). Each variant's A is stored with its sample count and 95% interval.
Without data the evaluation inputs are 64 generated samples (float inputs uniform in [-1, 1), integer inputs uniform
in [0, 100)) and the metric is agreement: the profile says so. int8 calibration uses ``x_calib``,
else the first 100 samples of ``x``, else the generated inputs.

Nothing here imports TensorFlow until a Keras model has to be read or converted.

Every change to a model (add, add --force, quantise, remove) holds the model's lock (flock on
``<registry>/.<NAME>.lock``; the kernel drops it when its process dies, so a SIGKILL leaves no
stale lock) and reaches the folder by rename: a new entry is built in a staging folder beside it
(``.<NAME>.<PID>.xxxx``) and renamed into place, a replaced one swapped out in one step (or moved
aside to ``.<NAME>.old`` first where the file system cannot swap, and put back by the next access
if the process died in between), a removed one renamed away before it is deleted. So a kill at any
moment leaves the old entry or the new one, and :func:`list_models` shows only complete entries,
never a staging folder. A second ``add`` of a name being written fails at once; a second
``quantise`` waits and then reads the record the first one wrote, so both keep their schemes.

The package's modules: :mod:`.records` (the schema), :mod:`.entries` (folders, the lock, get,
list, remove), :mod:`.adding`, :mod:`.converting` (quantise), :mod:`.measuring` (A of a variant)
and :mod:`.inputs` (profiling inputs).
"""

from .adding import add as add
from .converting import CONVERTING as CONVERTING
from .converting import _quantise_in as _quantise_in
from .converting import _quantise_isolated as _quantise_isolated
from .converting import quantise as quantise
from .entries import all_output_refs as all_output_refs
from .entries import check_name as check_name
from .entries import get as get
from .entries import keras_source as keras_source
from .entries import list_models as list_models
from .entries import model_dir as model_dir
from .entries import output_refs as output_refs
from .entries import remove as remove
from .entries import root as root
from .entries import variant_files as variant_files
from .inputs import profiling_inputs as profiling_inputs
from .measuring import output_error as output_error
from .measuring import score as score
from .records import CALIBRATION_SAMPLES as CALIBRATION_SAMPLES
from .records import CUSTOM_OBJECTS as CUSTOM_OBJECTS
from .records import GENERATED_SAMPLES as GENERATED_SAMPLES
from .records import NAME_RE as NAME_RE
from .records import PRECISIONS as PRECISIONS
from .records import RECORD as RECORD
from .records import RELATIVE as RELATIVE
from .records import SOURCE as SOURCE
from .records import DataRecord as DataRecord
from .records import MetricName as MetricName
from .records import ModelRecord as ModelRecord
from .records import OutputRecord as OutputRecord
from .records import VariantRecord as VariantRecord
