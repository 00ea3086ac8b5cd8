"""The Chinese half of :mod:`grpo_lab.roadmap`'s tables, keyed by row (what notebook 00 shows in Chinese mode).

Every row of :data:`~grpo_lab.roadmap.FAMILY`, :data:`~grpo_lab.roadmap.GLOSSARY`,
:data:`~grpo_lab.roadmap.SYMBOLS`, :data:`~grpo_lab.roadmap.NOTEBOOKS`,
:data:`~grpo_lab.roadmap.HEADLINES` and :data:`~grpo_lab.roadmap.PAPER_CLAIMS` has its entry here
(``tests/test_zh_mode.py`` fails on a row without one). Terms use :mod:`grpo_lab.terms`' words;
quotations of lecture notes 004 are its own sentences.
"""
from __future__ import annotations

# method -> what it changes relative to its parent
FAMILY_CHANGES = {
    "REINFORCE": "回报 R(τ) 是唯一的信号：全失败组没有梯度，全成功组把每个动作（连同坏习惯）一起往上推（L9 p.26）",
    "ReST": "采样、按奖励过滤、在通过的样本上微调：奖励仍是唯一的信号（没有基线），所以它与 REINFORCE 共有两处梯度死角"
            "（讲义 004 §一）",
    "baseline": "Â = R − b(h)，b 与动作无关；取决于 b，它可能降低方差，也可能抬高方差（笔记本 01）；本课程的台阶为 不减 → 常数 → 滑动均值 → "
                "价值模型（讲义中 L9 p.28 的列表是空的，这几级是本课程补出的）",
    "PPO": "裁剪的重要性比率；学出来的价值模型用 GAE 给出逐 token 的优势",
    "RLOO": "基线 = 同一提示其余 G − 1 个样本的平均奖励（无偏）",
    "GRPO": "不要价值模型：基线 = 组均值（其中含有样本自己的奖励，在 ÷σ 之前使期望梯度少了 1/G；RLOO 的留一均值没有这个偏差），"
            "尺度 = 组标准差（式 1），每组一个因子（笔记本 03）；"
            "每个 token 上是 PPO 的裁剪项（式 3），外加 k3 KL（式 5）",
    "Dr. GRPO": "去掉 ÷σ_R（难度偏差），并把 1/|y_i| 换成常数 1/C（长度偏差）",
    "DAPO": "clip-higher（ε_high > ε_low）、动态采样、批次平均（式 7）、overlong 奖励整形",
    "GSPO": "用序列级重要性比率 s_i = (π_θ(y_i)/π_old(y_i))^{1/|y_i|} 代替逐 token 的 ρ_{i,t}",
    "DPO": "在树外：免采样、免奖励模型；在偏好对上优化一个隐式的 RL 目标",
}

# glossary term -> meaning
GLOSSARY_MEANING = {
    "advantage": "一个动作比预期好多少，A = Q − V；用 Â = R − b 估计",
    "baseline": "从 R 中减去的数 b(h)，不得依赖动作；好的基线降低梯度估计的方差，坏的基线反而抬高方差",
    "reward-to-go": "从第 t 步起的奖励之和",
    "group normalization": "在同一提示的 G 个回答上计算 Â_i = (r_i − mean)/std（式 1）",
    "degenerate group": "奖励全部相等的组：Â = 0，没有梯度",
    "difficulty bias": "÷std 放大了几乎全对或几乎全错的提示的更新",
    "importance ratio": "ρ_{i,t} = π_θ(o_{i,t}|·)/π_old(o_{i,t}|·)，唯一逐 token 的因子（式 4）",
    "clipping": "min(ρÂ, clip(ρ, 1−ε, 1+ε)Â)（式 3）",
    "KL penalty (k3)": "u − log u − 1，u = π_ref/π_θ（式 5）",
    "sequence mean": "先在每个回答内部对 token 取平均，再对回答取平均（式 6）：回答等权",
    "batch (token) mean": "除以整批的 token 总数（式 7）：token 等权",
    "length bias": "在式 6 下，长的错误回答每个 token 受罚更轻，于是错误回答越写越长",
    "credit assignment": "是哪个 token 让回答变好；GRPO 把它交给跨样本的统计",
    "dynamic sampling": "DAPO：不断重新采样，直到这一批的每个组都有信息量",
    "TRL": "Hugging Face 的强化学习库；它的 GRPOTrainer 以选项的形式实现了 GRPO 与 2025 年的各个变体",
    "verl": "字节跳动 / 火山引擎用于大规模运行的强化学习框架（DAPO 基于它发布）；用 YAML 键配置，"
            "例如 actor.ppo_mini_batch_size",
    "vLLM": "快速推理引擎；TRL 与 verl 用它生成回答（采样这一步）",
    "steps_per_generation": "TRL：一批生成的回答被切成几个 micro-batch（几次前向/反向）；默认等于 "
                            "gradient_accumulation_steps，即一次生成只供一次优化器更新。设得更大会改变什么：04 §6",
    "ppo_mini_batch_size": "verl：一批提示被切成这么大的 mini-batch，每个做一次优化器更新（这会改变什么：04 §6）",
}

# symbol -> meaning
SYMBOL_MEANING = {
    "x": "提示",
    "G": "组大小：每个提示采样的回答数",
    "y_i, |y_i|": "第 i 个回答及其 token 数",
    "r_i": "回答 i 的奖励（验证器或奖励模型）",
    "Â_i": "组内相对优势，一个标量，整条回答共享",
    "ρ_{i,t}": "第 i 个回答第 t 个 token 处的重要性比率",
    "ℓ_{i,t}": "第 i 个回答第 t 个 token 的裁剪项取值",
    "o_{i,t}": "第 i 个回答的第 t 个 token（o_{i,<t}：它前面的 token），式 (4)",
    "ε, β": "裁剪范围；KL 系数",
    "π_θ": "正在训练的策略（参数为 θ 的语言模型）",
    "π_θold": "采样这一组的策略；重复使用同一批样本期间保持不变（ρ 的分母）",
    "π_ref": "KL 惩罚的参考策略，通常是强化学习之前的模型（式 (2)、(5)）",
}

GRANULARITY = {"sequence": "序列级", "token": "token 级", "—": "—"}

# notebook -> (title, the question it answers)
NOTEBOOKS = {
    "00_roadmap": ("路线图与家谱树", "每个方法在家谱上的哪个位置？后面每个笔记本回答什么问题？"),
    "01_bandit_baselines": ("双臂 bandit 上的基线", "为什么要减去一个期望奖励？为什么它不改变期望？"),
    "02_advantage_guess_number": ("优势函数", "一次失败的猜测怎么会是好动作？"),
    "03_group_advantage": ("组内优势", "GRPO 的组基线给每个回答什么，什么时候什么也不给？"),
    "04_grpo_loss": ("GRPO 损失逐项解剖", "为什么要比率和裁剪？逐 token 看比率 × 优势与裁剪。"),
    "04b_kl_penalty": ("KL 惩罚：k1、k2、k3，以及放在哪里",
                       "怎样从采样的 token 估计 KL(π_θ‖π_ref)？它该放进损失还是放进奖励？"),
    "05_length_bias": ("序列平均与批次平均", "在 GRPO 的 1/|y_i| 下，错误回答为什么越写越长？"),
    "06_grpo_llm": ("在极小的语言模型上跑完整的 GRPO 循环", "它能端到端地工作吗？指标是什么样子？"),
    "07_family": ("并排比较 2025 年的几条分支", "在同一个冻结批次上比较 Dr. GRPO、DAPO、GSPO 与 RLOO，以及如何迁移到 TRL/verl。"),
    "08_grpo_real_lm": ("在真实的预训练模型上运行 GRPO", "当模型是一个真实的预训练语言模型时，什么变了？"),
    "09_after_the_lecture": ("讲义之后：TRL/verl 中 2025–26 年的 GRPO 家族，以及训练与采样的不一致",
                             "讲义之后出现了什么？训练与采样为什么会不一致？"),
}

# method -> result, as lecture notes 004 quote it (its own words)
HEADLINE_RESULT = {
    "GRPO": "51.7 %",
    "Dr. GRPO": "43.3 %",
    "DAPO": "50 分",
    "GSPO": "已用于 Qwen3 的训练",
    "LongCat (DORA)": "rollout 与训练异步解耦：3 倍加速",
}

PAPER_CLAIM = {"Dr. GRPO": "7B 基座模型在 AIME 2024 上达到 43.3 %，来自“一个极简的 R1-Zero 配方”（基座模型、"
                          "模板、数据与 Dr. GRPO 合在一起），而不只是两处修正",
               "GSPO": "让强化学习训练更稳定，尤其是混合专家模型的训练"}

COLUMNS = {
    "method": "方法", "year": "年份", "source": "出处", "grows from": "父方法", "what it changes": "改了什么",
    "term": "术语", "中文": "中文", "meaning": "含义", "notebooks": "笔记本",
    "symbol": "记号", "granularity": "粒度",
    "model": "模型", "benchmark": "基准", "result (as lecture notes 004 quote it)": "结果（讲义 004 的原话）",
    "the paper's own claim": "论文自己的说法", "reference": "文献", "title": "题目",
    "notebook": "笔记本", "topic": "主题", "the question it answers": "它回答的问题", "code": "代码",
    # grpo_lab.methods.table()'s headers (roadmap.method_table)
    "advantage": "优势", "aggregation": "聚合方式", "ratio": "比率层级", "dynamic sampling": "动态采样",
    "overlong buffer": "超长缓冲", "policy loss": "策略损失", "lecture notes": "讲义", "paper": "论文",
    "bound": "约束范围", "TRL epsilon_high": "TRL 的 epsilon_high",
}
