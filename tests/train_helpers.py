"""The small training run many tests need: real SST-2 examples, a model folder, fp32, no checkpoints, no bars."""

from robustft.config import TrainConfig


def tiny_train_config(model, output_dir, **settings) -> TrainConfig:
    """One epoch on 16 SST-2 examples, scored on 16 dev examples; `settings` override any value."""
    values = dict(
        model=str(model),
        task="sst2",
        n_train=16,
        n_dev=16,
        epochs=1,
        batch_size=8,
        precision="fp32",
        checkpoint_every=0,
        progress=False,
        output_dir=str(output_dir),
    )
    return TrainConfig(**{**values, **settings})
