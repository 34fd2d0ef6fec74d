#pragma once
// Deliberately wrong: rung 3 reaching up into rung 4.
#include "execplan/plan.h"
