"""Multi-exit nets and conditional execution (Delen): exit criteria, exit profiles, adaptation
policies, and multi-tenant sharing.

``criteria`` is standard library only (a device runtime evaluates it after every exit);
``policies`` and ``sharing`` need numpy.
"""
