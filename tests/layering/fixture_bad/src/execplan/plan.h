#pragma once
#include "kernel/module.h"
