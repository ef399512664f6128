#!/usr/bin/env bash
# Prints the reward: the mean of check.py's sub-scores (0 when check.py prints nothing usable).
python3 /root/.openclaw/workspace/reward/check.py /root/.openclaw/workspace | python3 /root/.openclaw/workspace/reward/mean.py
