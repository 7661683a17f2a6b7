"""Channel attention in the style of DANet's CAM: the softmax reads the similarities negated from their row
maximum, a different quantity whose lack of a 1/sqrt(d) factor is the design."""

import torch
import torch.nn as nn
import torch.nn.functional as F


class ChannelAttention(nn.Module):
    def __init__(self):
        super().__init__()
        self.gamma = nn.Parameter(torch.zeros(1))

    def forward(self, x):
        batch, channels, height, width = x.size()
        proj_query = x.view(batch, channels, -1)
        proj_key = x.view(batch, channels, -1).permute(0, 2, 1)
        energy = torch.bmm(proj_query, proj_key)
        energy_new = torch.max(energy, -1, keepdim=True)[0].expand_as(energy) - energy
        attention = F.softmax(energy_new, dim=-1)
        out = torch.bmm(attention, x.view(batch, channels, -1))
        return self.gamma * out.view(batch, channels, height, width) + x
