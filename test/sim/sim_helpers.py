"""Drive the balance model from the simulated load cell, as the balance node does."""
from labference_ros.core.balance import BalanceModel, BalanceParameters

BALANCE_PERIOD_S = 0.01  # the node's wrench rate in these tests


def balance_for(backend) -> BalanceModel:
    model = BalanceModel(BalanceParameters(), backend.gravity)
    model.calibrate_empty(backend.empty_pan_wrench().force_up)
    return model


def run_balance(backend, balance: BalanceModel, seconds: float):
    """Advance the sim, feeding the balance every BALANCE_PERIOD_S; all readings."""
    readings = []
    for _ in range(int(round(seconds / BALANCE_PERIOD_S))):
        backend.advance(BALANCE_PERIOD_S)
        w = backend.pan_wrench()
        readings.append(balance.update(backend.sim_time, w.force, w.torque))
    return readings


def make_instance(layout_seed: int = 3, sample_mass_g: float = 130.0,
                  initial_on_pan: tuple[str, ...] = ()):
    from labference_ros.tasks.weighing.instance import WeighingInstance
    from labference_ros.tasks.weighing.layout import generate_layout
    return WeighingInstance(
        instance_id=f"test-{layout_seed}-{sample_mass_g}", condition="basic", task_seed=1,
        layout_seed=layout_seed, policy_seed=0, target_g=180.0, sample_mass_g=sample_mass_g,
        initial_on_pan=initial_on_pan, layout=generate_layout(layout_seed))
