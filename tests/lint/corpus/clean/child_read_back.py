"""Replacing a module's children in place (in the style of DeepSpeed's module injection): the replacement is read
back with ``getattr(model, name)`` and left unused. An attribute of the model is not the model recast, so the code
reading ``model`` afterwards reads the right thing."""

import torch.nn as nn


def replace_layers(model: nn.Module, policies: dict, layer_id: int = 0):
    for name, child in model.named_children():
        if child.__class__ in policies:
            setattr(model, name, policies[child.__class__](child, layer_id))
            new = getattr(model, name)
            layer_id += 1
        else:
            _, layer_id = replace_layers(child, policies, layer_id=layer_id)
    return model, layer_id
