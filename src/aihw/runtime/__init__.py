"""What every torch experiment stands on (torch layer, below the models and the measurements): choosing the
device and the process-group backend (:mod:`~aihw.runtime.device`), timing with the device synchronised
(:mod:`~aihw.runtime.timing`) and the bytes of tensors (:mod:`~aihw.runtime.tensors`)."""
