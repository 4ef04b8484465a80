"""Fleet scale on Ray: parallel evaluation and collection, and an SOP-style fleet of robot
actors streaming episodes through one writer to a learner that publishes weights.

Ray is the ``fleet`` extra (``pip install robot-learn[fleet]``); :func:`start_ray` runs it
on this machine, or joins a cluster given its address. Nothing here is imported by the
layers below.
"""

from robot_learn.fleet.cluster import start_ray
from robot_learn.fleet.fleet import Fleet, FleetReport
from robot_learn.fleet.registration import FleetRegistrationError, PolicySpaces, check_registration

__all__ = ["Fleet", "FleetReport", "FleetRegistrationError", "PolicySpaces", "check_registration", "start_ray"]
