"""Entry point: verl's PPO trainer with TA-GRPO, from a Hydra configuration built on verl's ``ppo_trainer``.

    python -m tagrpo.integrations.verl.main --config-path "$PWD/examples/verl/config" \
        --config-name ta_grpo_qwen3_1.7b data.train_files=... data.val_files=... trainer.n_gpus_per_node=4

Every verl key can be overridden on the command line (``key=value``), the ``tagrpo`` section too
(``tagrpo.num_rephrasings=0`` gives GRPO). ``docs/verl.md`` has the launch commands, single node and Ray cluster.
"""

from __future__ import annotations

import hydra


@hydra.main(config_path=None, config_name=None, version_base=None)
def main(config) -> None:
    from verl.trainer.main_ppo import run_ppo
    from verl.utils.device import auto_set_device

    from tagrpo.integrations.verl.settings import TAGRPOSettings, check_config
    from tagrpo.integrations.verl.trainer import TAGRPOTaskRunner

    auto_set_device(config)
    check_config(config, TAGRPOSettings.from_config(config))  # fail here, before Ray starts
    run_ppo(config, task_runner_class=TAGRPOTaskRunner)


if __name__ == "__main__":
    main()
